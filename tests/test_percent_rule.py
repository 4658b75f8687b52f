"""One plausibility rule for percent versus fractions (issue 55): every command that takes ``--percent``
refuses fractions declared percent, and still refuses percentages read as fractions."""

import shutil
from pathlib import Path

import numpy as np
import pytest

from clkit.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "clkit" / "compare" / "example_runs"


def _times_100(text: str) -> str:
    """Every number of a CSV times 100 (header and empty cells kept)."""
    def cell(v):
        try:
            return f"{100 * float(v):g}"
        except ValueError:
            return v
    lines = text.splitlines()
    return "\n".join(lines[:1] + [",".join(cell(v) for v in ln.split(",")) for ln in lines[1:]]) + "\n"


def test_compare_percent_on_a_fraction_file_is_refused(tmp_path, capsys):
    """``compare --percent`` on 0-1 files divided again ("+0.0016" for +0.16)."""
    args = ["--reference", "naive"]
    assert main(["compare", str(EXAMPLES), *args, "--percent"]) == 2
    err = capsys.readouterr().err
    assert "every value is at most 1" in err and "these look like fractions (0-1); drop --percent" in err
    # the other way: the same runs written as percentages, read without --percent, are refused too
    runs = tmp_path / "runs"
    shutil.copytree(EXAMPLES, runs)
    for f in runs.glob("*_seed*.csv"):
        f.write_text(_times_100(f.read_text()))
    manifest = runs / "runs.csv"
    rows = [ln.split(",") for ln in manifest.read_text().splitlines()]
    manifest.write_text("\n".join(",".join(r[:3] + [r[3] if i == 0 else f"{100 * float(r[3]):g}"]) for i, r in
                                  enumerate(rows)) + "\n")
    assert main(["compare", str(runs), *args]) == 2
    assert "It looks like percent" in capsys.readouterr().err
    assert main(["compare", str(runs), *args, "--percent"]) == 0       # and right with the flag


def test_metrics_cl_percent_on_fractions_and_a_fraction_baseline(tmp_path, capsys):
    frac = tmp_path / "R.csv"
    frac.write_text("0.9,0.1\n0.8,0.9\n")
    pct = tmp_path / "R_pct.csv"
    pct.write_text("90,10\n80,90\n")
    assert main(["metrics", "cl", str(frac), "--no-header", "--percent"]) == 2
    assert "these look like fractions" in capsys.readouterr().err
    # the case: percent R, baseline given as fractions (read as 0.10 %: FWT 0.112 for 0.013)
    assert main(["metrics", "cl", str(pct), "--no-header", "--percent", "--baseline", "0.10,0.087"]) == 2
    assert "--baseline: every value is at most 1" in capsys.readouterr().err
    assert main(["metrics", "cl", str(pct), "--no-header", "--percent", "--baseline", "10,8.7", "--out",
                 str(tmp_path / "out")]) == 0
    import json

    res = json.loads((tmp_path / "out" / "metrics_cl.json").read_text())
    fwt = [v for k, v in _flat(res).items() if k.lower().endswith("fwt")]
    assert fwt and np.isclose(fwt[0], 0.10 - 0.087), res    # R[0, 1] - b_1 on the fraction scale
    assert main(["metrics", "cl", str(frac), "--no-header", "--baseline", "10,8.7"]) == 2   # the other way
    assert "in percent? add --percent" in capsys.readouterr().err


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


@pytest.mark.parametrize("values", [[0.5, 0.9], [[1.0, 0.0], [0.2, 0.3]]])
def test_the_rule_itself(values):
    from clkit._scale import check_not_fractions

    with pytest.raises(ValueError, match="look like fractions"):
        check_not_fractions(values, where="x")
    check_not_fractions(np.asarray(values) * 100, where="x")
    check_not_fractions([float("nan")], where="x")    # nothing to judge
