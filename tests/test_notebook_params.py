"""Every parameter of every notebook is one that papermill can override.

papermill parses the parameters cell itself; a line it cannot parse (e.g. a comment
containing ``>=``) makes every run print "Unable to parse line ..." and "Passed unknown
parameter" for a parameter that is in fact declared -- alarming noise in a healthy run's
log, and papermill's parameter inspection (``papermill --help-notebook``) misses it. This
test keeps clkit's view of the parameters and papermill's identical.
"""

import papermill
import pytest

from clkit.run import list_notebooks, notebook_parameters, notebook_path


@pytest.mark.parametrize("notebook", list_notebooks())
def test_papermill_sees_every_declared_parameter(notebook):
    declared = notebook_parameters(notebook)
    seen = papermill.inspect_notebook(str(notebook_path(notebook)))
    assert set(seen) == set(declared), (
        f"{notebook}: papermill cannot parse {sorted(set(declared) - set(seen))} "
        f"(check the comment on that line of the parameters cell)")
