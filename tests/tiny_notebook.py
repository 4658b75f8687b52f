"""A tiny notebook for the command-line tests (not collected: no ``test_`` prefix).

Its parameters cell declares ``seed``, a dict ``learner_kwargs`` and ``sleep``; it
records ``y = 2 * seed`` and ``ewc_lambda`` (``learner_kwargs["ewc"]["ewc_lambda"]``, or
``None``) in ``results.json`` and writes ``seed.txt`` into its figures folder, in about a
second (plus ``sleep``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STEM = "00_tiny"
PARAMETERS = ("seed: int = 0  # a seed\n"
              "learner_kwargs: dict = {'si': {'si_lambda': 1.0}}  # per-learner settings {learner: {keyword: value}}\n"
              "sleep: float = 0.0  # seconds the run takes\n")
BODY = ("import time\n"
        "from clkit.plot import figures_dir\n"
        "from clkit.results import RunRecord\n"
        "time.sleep(sleep)\n"
        "rec = RunRecord('00_tiny', params=dict(seed=seed, learner_kwargs=learner_kwargs, sleep=sleep))\n"
        "rec.log(y=2 * seed, ewc_lambda=learner_kwargs.get('ewc', {}).get('ewc_lambda'))\n"
        "folder = figures_dir('00_tiny')\n"
        "folder.mkdir(parents=True, exist_ok=True)\n"
        "(folder / 'seed.txt').write_text(str(seed))\n"
        "rec.save()")


def write_tiny_notebook(folder, param_sets: dict | None = None) -> Path:
    """Write ``folder/00_tiny.ipynb`` and ``folder/params/00_tiny/<name>.yaml`` for ``param_sets``."""
    import nbformat
    import yaml

    folder = Path(folder)
    v4 = nbformat.v4
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# A tiny notebook"),
                                v4.new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
                                v4.new_code_cell(BODY)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{STEM}.ipynb"
    nbformat.write(nb, str(path))
    for name, values in (param_sets or {}).items():
        target = folder / "params" / STEM / f"{name}.yaml"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(yaml.safe_dump(values))
    return path


@contextlib.contextmanager
def notebooks_at(folder):
    """``$CLKIT_NOTEBOOKS`` set to ``folder`` for the block (a module-scoped fixture has no monkeypatch)."""
    before = os.environ.get("CLKIT_NOTEBOOKS")
    os.environ["CLKIT_NOTEBOOKS"] = str(folder)
    try:
        yield Path(folder)
    finally:
        if before is None:
            os.environ.pop("CLKIT_NOTEBOOKS", None)
        else:
            os.environ["CLKIT_NOTEBOOKS"] = before
