"""grades.csv says why the tests after an endless loop failed (issue 43); nbgrader's SQLAlchemy noise is off."""

import warnings

import nbformat

from clkit.course.grade import _cell_errors, quiet_nbgrader_warnings, timeout_notes


def test_a_timed_out_cell_becomes_a_note(tmp_path):
    nb = nbformat.v4.new_notebook()
    loop = nbformat.v4.new_code_cell("while True:\n    pass", metadata={"nbgrader": {"grade_id": "task_1"}})
    # what nbgrader's Execute preprocessor writes when a cell reaches its timeout (error_on_timeout)
    loop.outputs = [nbformat.v4.new_output("error", ename="CellTimeoutError",
                                           evalue="No reply from kernel before timeout", traceback=[])]
    test = nbformat.v4.new_code_cell("assert x == 1", metadata={"nbgrader": {"grade_id": "test_1"}})
    test.outputs = [nbformat.v4.new_output("error", ename="NameError", evalue="name 'x' is not defined",
                                           traceback=[])]
    nb.cells = [loop, test]
    path = tmp_path / "a.ipynb"
    nbformat.write(nb, str(path))
    errors = _cell_errors(path)
    assert errors == ["task_1: CellTimeoutError: No reply from kernel before timeout",
                      "test_1: NameError: name 'x' is not defined"]
    assert timeout_notes(errors) == ["cell task_1 did not finish within the 120 s limit per cell (an endless loop?); "
                                     "the tests after it could not run"]


def test_sqlalchemy_warnings_are_silenced():
    from sqlalchemy.exc import SAWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_nbgrader_warnings()
        warnings.warn("Object of type <Grade> not in session, add operation along ...", SAWarning)
        warnings.warn("kept", UserWarning)
    assert [str(w.message) for w in caught] == ["kept"]
