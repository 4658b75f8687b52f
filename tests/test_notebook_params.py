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


@pytest.mark.parametrize("notebook", list_notebooks())
def test_the_parameters_cell_is_the_default_set(notebook):
    """Run All in JupyterLab runs the experiment `make run` runs: every value of params/default.yaml
    is the parameters cell's own default (issue 38: 05's cell had overlaps [], default.yaml [0.1, 0.4,
    0.8]; 03's epochs and lr differed)."""
    import yaml

    from clkit.notebooks import notebooks_dir

    declared = notebook_parameters(notebook)
    default = yaml.safe_load((notebooks_dir() / "params" / notebook / "default.yaml").read_text()) or {}
    differ = {k: (declared[k]["default"], v) for k, v in default.items() if declared[k]["default"] != v}
    assert not differ, f"{notebook}: parameters cell vs default.yaml: {differ}"
