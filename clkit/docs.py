"""Generated numbers in the user guide: one command regenerates them, one check finds them stale.

Usage::

    python -m clkit.docs regenerate [--runs runs/default] [--figures figures]   # make docs
    python -m clkit.docs regenerate --check                                    # the test

A block of generated text in ``README.md`` or ``docs/*.md`` is delimited by two lines
(each marker alone on its line)::

    <!-- BEGIN generated: NAME -->
    ...
    <!-- END generated: NAME -->

and holds, verbatim, the file ``docs/generated/NAME.md``. Those files are the
committed inputs of the guide's numbers:

- ``docs/generated/findings-<notebook>.md`` and ``docs/generated/run-times.md`` are
  written here from a ``make run`` (``runs/default/``: each executed notebook's
  findings -- ``clkit.<paper>.report.findings_markdown(results)`` where the paper
  package has one, else the Markdown its "What this run shows" section displays,
  else results.json's ``summary`` --, the
  key numbers ``docs/guide.yaml`` names from ``summary.csv``, the run time and
  slowest cells from ``run.json`` / ``timings.csv``);
- the benchmark tables ``docs/generated/bench_*.md`` (or any other name) are written
  by the benchmark scripts' ``--markdown FILE``;
- blocks that a script writes straight into its page are listed in ``docs/guide.yaml``
  (``in_place``: name -> script) and left to that script;
- the README's picture, ``docs/images/...``, is copied from the run's figures
  (``guide.yaml``: ``picture``).

``regenerate`` writes the files from the run (when ``--runs`` holds one), then fills
every block from its file. ``--check`` writes nothing and exits 1 naming each block
whose text differs from its file, or whose file does not exist: the test suite runs
it, so a page cannot drift from the committed numbers, and the numbers change only
by regenerating them from a run.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from ._io import atomic_write_text, repo_root

__all__ = ["BLOCK", "blocks", "fill_blocks", "findings_markdown", "run_times_markdown", "write_generated",
           "regenerate", "check"]

#: a generated block: its name, and the text between the markers
BLOCK = re.compile(r"^(<!-- BEGIN generated: (?P<name>[\w.\-]+) -->\n)(?P<body>.*?)^(<!-- END generated: (?P=name) -->)$",
                   re.S | re.M)
_OPEN = re.compile(r"^<!-- BEGIN generated: ([\w.\-]+) -->$", re.M)
_CLOSING = re.compile(r"^#+\s.*what this run shows", re.I | re.M)


def blocks(text: str) -> dict[str, str]:
    """``{name: body}`` of the generated blocks in ``text`` (a name may appear once).

    >>> blocks("a\\n<!-- BEGIN generated: t -->\\n| x |\\n<!-- END generated: t -->\\nb")
    {'t': '| x |\\n'}
    """
    out = {}
    for m in BLOCK.finditer(text):
        if m.group("name") in out:
            raise ValueError(f"generated block {m.group('name')!r} appears twice")
        out[m.group("name")] = m.group("body")
    opened = _OPEN.findall(text)
    unclosed = [n for n in opened if n not in out]
    if unclosed:
        raise ValueError(f"generated block(s) {unclosed} have no matching '<!-- END generated: NAME -->' line")
    return out


def fill_blocks(text: str, sources: dict[str, str]) -> tuple[str, list[str]]:
    """``text`` with every block replaced by ``sources[name]``; and the names with no source.

    >>> fill_blocks("<!-- BEGIN generated: t -->\\nold\\n<!-- END generated: t -->", {"t": "new\\n"})
    ('<!-- BEGIN generated: t -->\\nnew\\n<!-- END generated: t -->', [])
    """
    missing = []

    def repl(m):
        name = m.group("name")
        if name not in sources:
            missing.append(name)
            return m.group(0)
        body = sources[name] if sources[name].endswith("\n") else sources[name] + "\n"
        return m.group(1) + body + m.group(4)

    blocks(text)  # raises on a malformed block
    return BLOCK.sub(repl, text), missing


def _in_place(root: Path) -> dict[str, str]:
    """``{block name: script}``: blocks that their own script writes into the page (guide.yaml ``in_place``)."""
    return {str(k): str(v) for k, v in (_guide_config(root).get("in_place") or {}).items()}


def _pages(root: Path) -> list[Path]:
    return [p for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))] if p.exists()]


def _sources(root: Path) -> dict[str, str]:
    return {p.stem: p.read_text(encoding="utf-8") for p in sorted((root / "docs" / "generated").glob("*.md"))}


# --------------------------------------------------------------------------- from a run

def _closing_text(executed: Path) -> str:
    """The Markdown the executed notebook displays in its "What this run shows" section."""
    import nbformat

    nb = nbformat.read(str(executed), as_version=4)
    start = max((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and _CLOSING.search(c.source)),
                default=None)
    if start is None:
        return ""
    parts = []
    for c in nb.cells[start + 1:]:
        if c.cell_type == "markdown" and re.match(r"^#+\s", c.source):
            break
        for out in c.get("outputs", []) if c.cell_type == "code" else []:
            md = out.get("data", {}).get("text/markdown")
            if md:
                parts.append((md if isinstance(md, str) else "".join(md)).strip())
    return "\n\n".join(parts)


#: the paper package of each notebook (``clkit.<package>.report.findings_markdown`` when it exists)
PAPER_PACKAGES = {"01_taskification": "taskification", "02_edge": "edge", "03_temporal_metrics": "temporal",
                  "04_curriculum": "curriculum", "05_drift": "drift"}


def _paper_findings(nb: str, res: dict) -> str:
    """``clkit.<paper>.report.findings_markdown(results)`` of notebook ``nb``, or ``""`` when the
    paper package has none (then the notebook's closing text, or results.json's ``summary``, is used).

    It is given the whole results.json (its ``params`` say how the run was made).
    """
    import importlib

    pkg = PAPER_PACKAGES.get(nb)
    if pkg is None or not res:
        return ""
    try:
        report = importlib.import_module(f"clkit.{pkg}.report")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"clkit.{pkg}", f"clkit.{pkg}.report"):
            raise
        return ""
    fn = getattr(report, "findings_markdown", None)
    if fn is None:
        return ""
    return str(fn(res)).strip()  # every paper's findings_markdown takes the whole file (or its "results")


def _local_paths_out(text: str, runs) -> str:
    """``text`` with the machine-local prefix of the run's project removed from every path.

    A run in ``/home/me/clkit/runs/default`` names files as ``/home/me/clkit/clkit/data/...``;
    the guide shows ``clkit/data/...``.

    Examples
    --------
    >>> _local_paths_out("read /tmp/x/project/clkit/data/cora; no copy in /tmp/x/project/data",
    ...                  Path("/tmp/x/project/runs/default"))
    'read clkit/data/cora; no copy in data'
    """
    runs = Path(runs).resolve()
    project = runs.parent.parent if runs.parent.name == "runs" else runs.parent
    return text.replace(str(project) + "/", "")


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def findings_markdown(run_dir, key_numbers: dict | None = None, summary_row: dict | None = None) -> str:
    """The findings block of one executed notebook (``RUNS/<notebook>/``).

    A line saying which run it is (parameter set, seed, data, when, how long), the
    notebook's own closing text, and a table of ``key_numbers`` (``{label: column}``)
    read from its row of ``summary.csv`` (``summary_row``).

    Raises ``ValueError`` naming a key number whose column the run does not have.
    """
    run_dir = Path(run_dir)
    nb = run_dir.name
    meta = json.loads((run_dir / "run.json").read_text())
    res = json.loads((run_dir / "results.json").read_text()) if (run_dir / "results.json").exists() else {}
    params = meta.get("params", {})
    data = res.get("results", {}).get("data_source")
    bits = [f"parameters `{meta.get('params_set', '?')}`"]
    if "seed" in params:
        bits.append(f"seed {params['seed']}")
    if isinstance(data, str):
        bits.append(f"data: {data}")
    if isinstance(meta.get("runtime_s"), (int, float)):
        bits.append(f"{meta['runtime_s']:.0f} s")
    if meta.get("finished"):
        bits.append(f"finished {meta['finished'][:10]}")
    lines = [f"*Default run of `{nb}` ({'; '.join(bits)}), in the notebook's own words:*", ""]
    text = (_paper_findings(nb, res) or _closing_text(run_dir / f"{nb}.ipynb")
            or res.get("results", {}).get("summary") or res.get("summary") or "")
    lines += [text or "*(the notebook displayed no closing text)*", ""]
    if key_numbers:
        row = summary_row or {}
        absent = [col for col in key_numbers.values() if col not in row]
        if absent:
            raise ValueError(f"key_numbers of {nb}: {absent} not in its row of summary.csv (docs/guide.yaml names "
                             "them; the notebook no longer records them?)")
        lines += ["| key number | value | `summary.csv` column |", "|---|---|---|"]
        lines += [f"| {label} | {_fmt(row[col])} | `{col}` |" for label, col in key_numbers.items()]
        lines.append("")
    return "\n".join(lines)


def run_times_markdown(runs, notebooks) -> str:
    """Table of the run's wall time per notebook and its two slowest cells (``timings.csv``)."""
    import pandas as pd

    runs = Path(runs)
    rows = ["| notebook | parameters | run time | slowest cell (section, seconds) | next |", "|---|---|---|---|---|"]
    for nb in notebooks:
        meta_path = runs / nb / "run.json"
        if not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        cells = ["", ""]
        t = runs / nb / "timings.csv"
        if t.exists():
            df = pd.read_csv(t)
            col = next((c for c in ("seconds", "duration_s", "runtime_s") if c in df.columns), None)
            if col is not None:
                top = df.sort_values(col, ascending=False).head(2)
                sec = "section" if "section" in df.columns else None
                cells = [f"{str(r[sec]).replace('|', '/') if sec else ''}: {r[col]:.1f} s" for _, r in top.iterrows()]
                cells += [""] * (2 - len(cells))
        rt = meta.get("runtime_s")
        rows.append(f"| {nb} | {meta.get('params_set', '?')} | {rt:.0f} s | {cells[0]} | {cells[1]} |"
                    if isinstance(rt, (int, float)) else f"| {nb} | {meta.get('params_set', '?')} | ? | | |")
    return "\n".join(rows) + "\n"


def _guide_config(root: Path) -> dict:
    import yaml

    path = root / "docs" / "guide.yaml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if path.exists() else {}


def write_generated(root, runs, figures=None, log=print) -> list[Path]:
    """Write ``docs/generated/findings-*.md``, ``run-times.md`` and the picture from a run; the paths written.

    ``runs`` is a ``make run`` folder (``<notebook>/<notebook>.ipynb``, ``run.json``,
    ``summary.csv``); ``figures`` the figures folder of that run (default
    ``ROOT/figures``).
    """
    import pandas as pd

    from .run import list_notebooks

    root, runs = Path(root), Path(runs)
    figures = Path(figures) if figures else root / "figures"
    cfg = _guide_config(root)
    gen = root / "docs" / "generated"
    summary = pd.read_csv(runs / "summary.csv") if (runs / "summary.csv").exists() else None
    written, errors = [], []
    executed = [nb for nb in list_notebooks() if (runs / nb / f"{nb}.ipynb").exists() and (runs / nb / "run.json").exists()]
    for nb in executed:
        row = None
        if summary is not None and "notebook" in summary.columns:
            match = summary[summary["notebook"] == nb]
            row = match.iloc[-1].dropna().to_dict() if len(match) else None
        try:
            text = findings_markdown(runs / nb, (cfg.get("key_numbers") or {}).get(nb), row)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        written.append(atomic_write_text(gen / f"findings-{nb}.md", _local_paths_out(text, runs)))
    if executed:
        written.append(atomic_write_text(gen / "run-times.md", run_times_markdown(runs, list_notebooks())))
    pic = cfg.get("picture")
    if pic:
        src, dest = figures / pic["from"], root / "docs" / pic["to"]
        if src.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
            written.append(dest)
        else:
            errors.append(f"picture: {src} not found (guide.yaml picture.from, under the run's figures folder)")
    for p in written:
        log(f"[docs] wrote {p.relative_to(root) if p.is_relative_to(root) else p}")
    if errors:
        raise ValueError("; ".join(errors))
    return written


def regenerate(root=None, runs=None, figures=None, log=print) -> list[Path]:
    """Write the generated files from ``runs`` (when given and present), then fill every block of
    ``README.md`` and ``docs/*.md`` from ``docs/generated/``; the pages changed.

    Raises ``ValueError`` naming a block without a file in ``docs/generated/``.
    """
    root = Path(root) if root else repo_root()
    if runs is not None and (Path(runs) / "summary.csv").exists():
        write_generated(root, runs, figures, log)
    elif runs is not None:
        log(f"[docs] no run in {runs} (no summary.csv): the findings are left as committed")
    sources, changed, missing, in_place = _sources(root), [], [], _in_place(root)
    for page in _pages(root):
        old = page.read_text(encoding="utf-8")
        new, absent = fill_blocks(old, sources)
        missing += [f"{page.relative_to(root)}: {name}" for name in absent if name not in in_place]
        if new != old:
            atomic_write_text(page, new)
            changed.append(page)
            log(f"[docs] filled {page.relative_to(root)}")
    if missing:
        raise ValueError(f"generated blocks without a file docs/generated/NAME.md: {missing}")
    return changed


def check(root=None) -> list[str]:
    """Problems with the generated blocks of ``README.md`` and ``docs/*.md``: each block whose text is
    not its file's, or whose file is missing; empty when all are current.

    A block that its own script writes into the page (``docs/guide.yaml``: ``in_place:
    {NAME: script}``, e.g. ``benchmarks/cora_sigma_table.py``) is not compared here; the
    script must exist.
    """
    root = Path(root) if root else repo_root()
    sources, problems, in_place = _sources(root), [], _in_place(root)
    for page in _pages(root):
        for name, body in blocks(page.read_text(encoding="utf-8")).items():
            want = sources.get(name)
            if want is None and name in in_place:
                if not (root / in_place[name].split()[0]).exists():
                    problems.append(f"{page.relative_to(root)}: block {name!r} is written by {in_place[name]!r} "
                                    "(guide.yaml in_place), which does not exist")
            elif want is None:
                problems.append(f"{page.relative_to(root)}: block {name!r} has no file docs/generated/{name}.md")
            elif body != (want if want.endswith("\n") else want + "\n"):
                problems.append(f"{page.relative_to(root)}: block {name!r} differs from docs/generated/{name}.md "
                                "(run `make docs`)")
    return problems


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m clkit.docs", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("regenerate", help="write docs/generated/ from a run and fill the guide's generated blocks")
    r.add_argument("--runs", default="runs/default", help="the run to take findings from (default: runs/default)")
    r.add_argument("--figures", default="figures", help="that run's figures folder (default: figures)")
    r.add_argument("--no-run", action="store_true", help="only fill the blocks from docs/generated/")
    r.add_argument("--check", action="store_true", help="write nothing; exit 1 if a block is stale")
    args = ap.parse_args(argv)
    try:
        if args.check:
            problems = check()
            for p in problems:
                print(f"[docs] {p}", file=sys.stderr)
            print(f"[docs] {'stale' if problems else 'all generated blocks are current'}")
            return 1 if problems else 0
        regenerate(runs=None if args.no_run else args.runs, figures=args.figures)
    except ValueError as exc:
        print(f"[docs] ERROR: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
