"""Notebook 06's parameters: checked in one call, and where its runs come from.

``runs="example"`` reads the runs shipped with clkit (:mod:`clkit.compare.examples`); any other
value is a path read by :func:`clkit.compare.read_runs` (a folder with a manifest, a long CSV, a
mammoth or PyCIL log, ...).
"""

from __future__ import annotations

import os
from pathlib import Path

from .._validate import check_choice, check_real, check_type
from .metrics import METRICS

__all__ = ["check_params", "resolve_runs", "data_label", "data_note"]


def check_params(*, runs, reference, compare, metric, percent, target_effect, tolerance, oracle_shift,
                 oracle_sds=3.0) -> dict:
    """Check notebook 06's parameters; returns them as a dict.

    ``oracle_shift`` (in [0, 1]) sizes the pipeline check, ``oracle_sds`` (>= 0) the oracle control's
    planted gain in spreads of the sharpest comparison (:mod:`clkit.compare.oracle`); 0 turns either off.

    Examples
    --------
    >>> check_params(runs="example", reference="naive", compare=[], metric="acc", percent=False,
    ...              target_effect=0.01, tolerance=0.001, oracle_shift=0.1)["metric"]
    'acc'
    >>> check_params(runs="example", reference="", compare=[], metric="acc", percent=False,
    ...              target_effect=0.01, tolerance=0.001, oracle_shift=0.1)
    Traceback (most recent call last):
    ...
    ValueError: name the comparisons (compare: ["A:B", ...]) or a reference method, got reference='' and compare=[]
    """
    check_type("runs", runs, str)
    if not runs:
        raise ValueError("runs must be 'example' or a path to your runs, got ''")
    check_type("reference", reference, str)
    check_type("compare", compare, list)
    for c in compare:
        if not isinstance(c, str) or c.count(":") != 1 or not all(c.split(":")):
            raise ValueError(f"compare entries must read 'A:B' (two method names), got {c!r}")
    if not reference and not compare:
        raise ValueError(f"name the comparisons (compare: [\"A:B\", ...]) or a reference method, got "
                         f"reference={reference!r} and compare={compare!r}")
    check_choice("metric", metric, list(METRICS))
    check_type("percent", percent, bool)
    check_real("target_effect", target_effect, low=0)
    check_real("tolerance", tolerance, low=0)
    check_real("oracle_shift", oracle_shift, low=0, high=1)
    check_real("oracle_sds", oracle_sds, low=0)
    return dict(runs=runs, reference=reference, compare=list(compare), metric=metric, percent=percent,
                target_effect=target_effect, tolerance=tolerance, oracle_shift=oracle_shift, oracle_sds=oracle_sds)


def resolve_runs(runs: str) -> Path:
    """The path ``runs`` names: the shipped example runs for ``"example"``, else the path itself.

    Examples
    --------
    >>> resolve_runs("example").name
    'example_runs'
    """
    if runs == "example":
        from .examples import example_runs_path

        return example_runs_path()
    p = Path(runs).expanduser()
    if not p.exists():
        raise FileNotFoundError(f"runs: {runs!r} does not exist (looked for {p.absolute()}; `clkit run 06 -p runs "
                                "PATH` resolves a relative PATH against the folder you run it from); give 'example' "
                                "(the runs shipped with clkit) or a folder with runs.csv / runs.yaml, a long CSV, a "
                                "mammoth / PyCIL log or an MLflow store (docs/compare.md)")
    return p


def shown_sources(table, runs: str):
    """``table`` with its ``source`` column free of machine paths: relative to the runs' folder, named by it.

    A notebook handed in must not carry ``/home/<user>/...`` or ``.../site-packages/...``: a source
    inside the runs' folder is shown as ``<folder name>/<path inside>``, any other absolute path by
    its file name.

    Examples
    --------
    >>> import pandas as pd
    >>> base = resolve_runs("example")
    >>> shown_sources(pd.DataFrame({"source": [str(base / "naive_seed0.csv"), "/home/u/x/r.csv line 3"]}),
    ...               "example")["source"].tolist()
    ['example_runs/naive_seed0.csv', 'r.csv line 3']
    """
    if "source" not in getattr(table, "columns", ()):
        return table
    base = resolve_runs(runs).resolve()
    root = base if base.is_dir() else base.parent

    def one(text):
        text = str(text)
        for prefix in (str(root), str(resolve_runs(runs))):
            if text.startswith(prefix + os.sep) or text == prefix:
                return root.name + "/" + text[len(prefix) + 1:]
        if os.path.isabs(text.split(" ")[0]) or "site-packages" in text:
            return os.path.basename(text.split(" line")[0].split(" run ")[0].split(" rows")[0]) + \
                text[len(text.split(" line")[0].split(" run ")[0].split(" rows")[0]):]
        return text

    out = table.copy()
    out["source"] = [one(t) for t in out["source"]]
    return out


def data_label(runs: str) -> str:
    """A short name of the runs read (a run's ``data_source``).

    Examples
    --------
    >>> data_label("example")
    "the example runs shipped with clkit (real training runs on scikit-learn's digits)"
    """
    if runs == "example":
        return "the example runs shipped with clkit (real training runs on scikit-learn's digits)"
    return f"your runs from {Path(runs).name}"  # the folder's name: no machine path in a handed-in notebook


def data_note(runs: str, read) -> str:
    """One Markdown sentence saying which runs this notebook read.

    Examples
    --------
    >>> from clkit.compare import read_runs
    >>> data_note("example", read_runs(resolve_runs("example")))[:40]
    '**Runs read:** the example runs shipped '
    """
    n, methods = len(read), sorted({r.method for r in read})
    seeds = sorted({r.seed for r in read}, key=lambda s: (len(s), s))
    what = (f"{n} run(s) of {len(methods)} method(s) ({', '.join(methods)}), seeds {', '.join(seeds)}, "
            f"{read.runs[0].num_tasks} tasks, {read.format} format")
    if runs == "example":
        return ("**Runs read:** the example runs shipped with clkit (`clkit/compare/example_runs`, made by "
                "`python -m clkit.compare.examples`): real training runs of clkit strategies on scikit-learn's "
                "8x8 handwritten digits, five class-incremental tasks of two classes, one accuracy matrix per run, "
                f"as another trainer would write them; {what}. Their `reported_acc` is the *average incremental "
                "accuracy* many trainers print as their summary, not ACC.")
    return f"**Runs read:** your runs from `{Path(runs).name}`; {what}."
