"""``clkit metrics cl --baseline``: on the matrix's scale, --percent applied to it, NaN/inf refused (issue 43)."""

import json

import numpy as np
import pandas as pd
import pytest

from clkit.cli import main

R = np.array([[0.50, 0.12, 0.11, 0.10], [0.45, 0.60, 0.12, 0.11],
              [0.40, 0.55, 0.70, 0.13], [0.35, 0.50, 0.65, 0.80]])
B = np.array([0.10, 0.11, 0.09, 0.10])


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def files(tmp_path):
    unit, pct = tmp_path / "R.csv", tmp_path / "R_pct.csv"
    pd.DataFrame(R).to_csv(unit, index=False, header=False)
    pd.DataFrame(100 * R).to_csv(pct, index=False, header=False)
    return unit, pct


def test_percent_scales_the_baseline_like_the_matrix(tmp_path, capsys, files):
    unit, pct = files
    # hand: FWT (Lopez-Paz) = mean_{j>=1} (R[j-1, j] - b_j) = ((.12-.11) + (.12-.09) + (.13-.10)) / 3
    hand = ((0.12 - 0.11) + (0.12 - 0.09) + (0.13 - 0.10)) / 3
    fwt = []
    for f, b, extra in ((unit, B, []), (pct, 100 * B, ["--percent"])):
        out = tmp_path / f.stem
        code, _, err = run(capsys, "metrics", "cl", f, "--no-header", "--no-index-col", *extra, "--baseline",
                           ",".join(f"{v:g}" for v in b), "--out", out)
        assert code == 0, err
        fwt.append(json.loads((out / "metrics_cl.json").read_text())["fwt"])
    assert fwt == pytest.approx([hand, hand])


@pytest.mark.parametrize("baseline, extra, message", [
    ("10,11,9,10", [], "10 is outside [0, 1], the scale of R's scores (in percent? add --percent)"),
    ("5,5,5,5", [], "5 is outside [0, 1]"),
    ("0.1,nan,0.1,0.1", [], "nan is not a finite number"),
    ("0.1,inf,0.1,0.1", [], "inf is not a finite number"),
    # issue 55: a baseline at or below 1 % on every task is fractions given with --percent (read as 0.1 %,
    # FWT came out 0.112 instead of 0.013): refused by clkit._scale's one rule
    ("0.1,0.1,0.1,0.1", ["--percent"], "--baseline: every value is at most 1 (0.1 to 0.1) with --percent"),
    ("0.1,2,0.1,0.1", ["--percent"], None),            # one value above 1: percentages, if low ones
    ("150,10,10,10", ["--percent"], "150 is outside [0, 100]"),
])
def test_baseline_out_of_scale_or_not_finite_is_refused(tmp_path, capsys, files, baseline, extra, message):
    unit, pct = files
    f = pct if extra else unit
    code, _, err = run(capsys, "metrics", "cl", f, "--no-header", "--no-index-col", *extra, "--baseline", baseline)
    if message is None:
        assert code == 0
    else:
        assert code == 2 and message in err


@pytest.mark.parametrize("sep, name", [("\t", "tabs"), (";", "';'")])
def test_tab_and_semicolon_matrices_read_like_csv(tmp_path, capsys, files, sep, name):
    """Issue 43: such files were refused with messages that never named the separator."""
    unit, _ = files
    f = tmp_path / "R.tsv"
    f.write_text("\n".join(sep.join(f"{v:g}" for v in row) for row in R) + "\n")
    outs = []
    for path in (unit, f):
        code, out, err = run(capsys, "metrics", "cl", path, "--no-header", "--no-index-col", "--out", tmp_path / path.stem)
        assert code == 0, err
        outs.append(json.loads((tmp_path / path.stem / "metrics_cl.json").read_text())["acc"])
    assert outs[0] == outs[1]


def test_decimal_commas_are_refused_naming_the_separator(tmp_path, capsys):
    f = tmp_path / "R_eu.csv"
    f.write_text("0,5;0,1\n0,4;0,6\n")
    code, _, err = run(capsys, "metrics", "cl", f, "--no-header", "--no-index-col")
    assert code == 2 and "separates cells with ';' and writes decimal commas (e.g. '0,5')" in err
