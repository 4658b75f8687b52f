"""Smaller defects of issue 55, each refused or said in one line (tests that failed before)."""

import warnings

import numpy as np
import pytest

from clkit.cli import main


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:   # argparse-style errors of clkit metrics
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_empty_params_file_note_is_said_once(tmp_path):
    from clkit import notebooks

    f = tmp_path / "empty.yaml"
    f.write_text("# nothing set\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):   # clkit run reads the file before the run, again in it, and --check once more
            assert isinstance(notebooks.load_params("03_temporal_metrics", str(f)), dict)
    notes = [w for w in caught if "sets no parameter" in str(w.message)]
    assert len(notes) == 1, [str(w.message) for w in caught]


@pytest.mark.parametrize("value", ["1e308", "-1e200", "1e151"])
def test_a_huge_cell_is_refused_not_turned_into_inf(tmp_path, capsys, value):
    f = tmp_path / "R.csv"
    f.write_text(f"0.5,\n{value},0.4\n")
    code, out, err = _run(["metrics", "cl", str(f), "--error"], capsys)
    assert code == 2, out + err
    assert "overflow encountered" not in err and "inf" not in out
    assert f"has {float(value):g} at [1, 0]" in err and "beyond +-1e+150" in err, err
    f.write_text("0.5,\n1e150,0.4\n")   # at the bound: read, and finite
    code, out, err = _run(["metrics", "cl", str(f), "--error"], capsys)
    assert code == 0 and "overflow" not in err and " inf" not in out, out + err


def test_an_all_zero_A_gives_tas_1_with_a_word():
    from clkit.temporal.metrics import temporal_adaptation_score

    Z = np.triu(np.zeros((3, 3))) + np.tril(np.full((3, 3), np.nan), -1)
    with pytest.warns(UserWarning, match=r"TAS is 1 by convention at period\(s\) \[0, 1\]"):
        tas = temporal_adaptation_score(Z, n=2)
    assert tas[:2].tolist() == [1.0, 1.0] and np.isnan(tas[2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # an ordinary A says nothing
        temporal_adaptation_score([[0.8, 0.6], [np.nan, 0.8]], n=1)


def test_n_beyond_the_periods_is_refused(tmp_path, capsys):
    f = tmp_path / "A.csv"
    f.write_text("".join(",".join("" if j < i else "0.5" for j in range(6)) + "\n" for i in range(6)))
    code, out, err = _run(["metrics", "temporal", str(f), "--n", "100"], capsys)
    assert code == 2 and "--n 100 averages 100 future periods, but A has 6 periods" in err, err
    assert "give --n between 1 and 5" in err
    code, out, err = _run(["metrics", "temporal", str(f), "--n", "5"], capsys)
    assert code == 0, err
