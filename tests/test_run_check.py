"""``clkit run --check`` (issue 43): the parameters validated through the notebook's validation
cell, in seconds, nothing written; bad input exits 2 naming it."""

import contextlib
import io
import os

import nbformat
import pytest

from clkit.cli import main
from clkit.run import check_notebook, list_notebooks, notebook_path, validation_cell


def _clkit(argv, cwd):
    out, err, before = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    finally:
        os.chdir(before)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("nb", list_notebooks())
def test_every_notebook_has_a_validation_cell_right_after_its_setup(nb):
    cells = nbformat.read(str(notebook_path(nb)), as_version=4).cells
    i = validation_cell(cells)
    assert sum(c.cell_type == "code" for c in cells[:i + 1]) <= 4, "the check would run more than the set-up"


def test_check_passes_and_writes_nothing(tmp_path):
    rc, out, err = _clkit(["run", "03", "--params", "smoke", "-p", "learner_kwargs.ewc.ewc_lambda", "100",
                           "--out", "runs/x", "--check"], tmp_path)
    assert rc == 0, err
    assert "03_temporal_metrics: parameters valid" in out and "nothing was written" in out
    assert list(tmp_path.iterdir()) == []


def test_check_refuses_what_the_validation_cell_refuses(tmp_path):
    # load_params accepts it (learner_kwargs is a dict); only 04's validation cell knows it trains no EWC
    rc, out, err = _clkit(["run", "04", "--params", "smoke", "-p", "learner_kwargs.ewc.ewc_lambda", "100",
                           "--check"], tmp_path)
    assert rc == 2
    assert "04_curriculum failed in cell" in err and "learner_kwargs" in err and "'ewc'" in err
    assert "Traceback" not in err and list(tmp_path.iterdir()) == []


def test_check_refuses_an_unknown_parameter_before_any_cell():
    with pytest.raises(ValueError, match="no_such"):
        check_notebook("03", "smoke", [("no_such", "1")])


def test_a_notebook_without_validation_cell_is_named():
    v4 = nbformat.v4
    with pytest.raises(ValueError, match="no validation cell"):
        validation_cell([v4.new_code_cell("a = 1", metadata={"tags": ["parameters"]}), v4.new_code_cell("b = a")])
    with pytest.raises(ValueError, match="parameters"):
        validation_cell([v4.new_code_cell("check_params(a=1)")])
