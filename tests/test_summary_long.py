"""``clkit summary --long``: tidy rows equal to the wide table's cells (issue 42)."""

import json

import pandas as pd

from clkit.cli import main
from clkit.summary import long_table


def test_long_rows_hold_every_numeric_cell_once(tmp_path, capsys):
    for i, (seed, acc) in enumerate([(0, 0.5), (1, 0.7), (2, 0.6)]):
        d = tmp_path / f"r{i}"
        d.mkdir()
        rec = {"notebook": "x", "params": {"seed": seed, "learners": ["a", "b"]},
               "results": {"acc": acc, "nested": {"bwt": -acc / 10}, "text": "words", "flag": True}}
        (d / "results.json").write_text(json.dumps(rec))
    assert main(["summary", str(tmp_path), "--long"]) == 0
    wide = pd.read_csv(tmp_path / "summary.csv")
    long = pd.read_csv(tmp_path / "summary_long.csv")
    assert sorted(long["metric"].unique()) == ["acc", "nested.bwt"]          # text and booleans left out
    assert len(long) == 3 * 2 and list(long.columns[-2:]) == ["metric", "value"]
    for _, row in long.iterrows():
        assert wide.loc[wide["run"] == row["run"], row["metric"]].item() == row["value"]
        assert row["param.seed"] == int(row["run"][1:])
    assert "long rows ->" in capsys.readouterr().out


def test_a_summary_without_numbers_has_no_long_form():
    import pytest

    with pytest.raises(ValueError, match="no numeric result column"):
        long_table(pd.DataFrame({"run": ["a"], "summary": ["x"]}))
