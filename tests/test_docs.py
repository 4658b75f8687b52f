"""The user guide (issue 29): generated blocks match their committed inputs, regeneration
from a run writes them, and the site builds the guide beside the notebooks, with pages
that do not exist yet named, never broken.

Committed inputs of the guide's numbers: ``docs/generated/*.md`` (findings and run times
written by ``python -m clkit.docs regenerate`` from a ``make run``; benchmark tables written by
the benchmark scripts' ``--markdown``) and ``docs/images/`` (the README's picture). ``runs/``
is not committed, so the findings are checked as the pages' copies of those files, and the
regeneration itself on a small executed notebook made here.
"""

import json
import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from clkit import docs as cd
from clkit.run import list_notebooks

ROOT = Path(__file__).resolve().parents[1]


def test_committed_guide_blocks_equal_their_generated_files():
    assert cd.check(ROOT) == [], "run `make docs` (python -m clkit.docs regenerate)"


def test_every_notebook_has_committed_findings_embedded_in_the_guide():
    embedded = {}
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        embedded.update(cd.blocks(page.read_text(encoding="utf-8")))
    for nb in list_notebooks():
        name = f"findings-{nb}"
        text = (ROOT / "docs" / "generated" / f"{name}.md").read_text(encoding="utf-8")
        assert embedded[name] == text, nb
        assert f"`{nb}`" in text and "| key number |" in text
    assert "run-times" in embedded


def test_readme_is_a_landing_page():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    assert "make run " in text and "make test " in text  # .ci/run calls `make test`
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(pictures) == 1 and (ROOT / pictures[0]).is_file()
    for nb in list_notebooks():
        assert f"notebooks/{nb}.ipynb" in text
    for page in ("docs/index.md", "docs/running.md", "docs/your-method.md", "docs/teaching.md", "docs/data.md",
                 "docs/development.md", "docs/benchmarks.md"):
        assert f"({page})" in text


# --------------------------------------------------------------------------- regeneration from a run

def _executed(folder: Path, nb: str, closing: str, runtime=12.5) -> None:
    """A minimal executed notebook as ``clkit run`` leaves it: notebook, run.json, results.json, timings.csv."""
    d = folder / nb
    d.mkdir(parents=True)
    cells = [nbformat.v4.new_markdown_cell(f"# {nb}\n\nA claim, and $x_i = 1$."),
             nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", text="1\n")]),
             nbformat.v4.new_markdown_cell("## What this run shows"),
             nbformat.v4.new_code_cell("display(Markdown(text))", outputs=[
                 nbformat.v4.new_output("display_data", data={"text/markdown": closing, "text/plain": "<Markdown>"})]),
             nbformat.v4.new_code_cell("record.save()")]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), str(d / f"{nb}.ipynb"))
    (d / "run.json").write_text(json.dumps({"notebook": nb, "params_set": "default", "params": {"seed": 0},
                                            "status": "ok", "runtime_s": runtime, "finished": "2026-01-02T03:04:05"}))
    (d / "results.json").write_text(json.dumps({"notebook": nb, "results": {"data_source": "toy data"}}))
    pd.DataFrame({"cell": [1, 2], "section": ["Setup", "Method"], "duration_s": [0.5, 9.0],
                  "first_line": ["a", "b"]}).to_csv(d / "timings.csv", index=False)


def test_findings_regenerated_from_a_run(tmp_path):
    runs = tmp_path / "runs"
    _executed(runs, "03_temporal_metrics", "TAS ranges from **95.6%** to 98.0%.")
    row = {"notebook": "03_temporal_metrics", "learners.erm.tas": 0.97453}
    text = cd.findings_markdown(runs / "03_temporal_metrics", {"TAS, ERM": "learners.erm.tas"}, row)
    assert text.splitlines()[0] == ("*Default run of `03_temporal_metrics` (parameters `default`; seed 0; data: toy "
                                    "data; 12 s; finished 2026-01-02), in the notebook's own words:*")
    assert "TAS ranges from **95.6%** to 98.0%." in text and "| TAS, ERM | 0.9745 | `learners.erm.tas` |" in text
    with pytest.raises(ValueError, match=r"key_numbers of 03_temporal_metrics: \['learners.ewc.tas'\] not in"):
        cd.findings_markdown(runs / "03_temporal_metrics", {"TAS, EWC": "learners.ewc.tas"}, row)
    times = cd.run_times_markdown(runs, ["03_temporal_metrics", "05_drift"])
    assert times.splitlines()[2] == "| 03_temporal_metrics | default | 12 s | Method: 9.0 s | Setup: 0.5 s |"
    assert len(times.splitlines()) == 3  # a notebook without a run is left out


def test_findings_come_from_the_paper_report_when_it_has_one(tmp_path, monkeypatch):
    """``clkit.<paper>.report.findings_markdown(results)`` wins; without it the notebook's closing
    text, and without that results.json's ``summary``."""
    import sys
    import types

    runs = tmp_path / "runs"
    _executed(runs, "03_temporal_metrics", "closing text of the notebook")
    res = runs / "03_temporal_metrics" / "results.json"
    res.write_text(json.dumps({"notebook": "x", "results": {"summary": "summary key", "tas": 0.5}}))
    report = types.ModuleType("clkit.temporal.report")
    report.findings_markdown = lambda res: f"TAS is {res['results']['tas']:.2f} (from the report)"  # the whole file
    monkeypatch.setitem(sys.modules, "clkit.temporal.report", report)
    assert "TAS is 0.50 (from the report)" in cd.findings_markdown(runs / "03_temporal_metrics")
    del report.findings_markdown
    text = cd.findings_markdown(runs / "03_temporal_metrics")
    assert "closing text of the notebook" in text and "from the report" not in text
    nb = runs / "03_temporal_metrics" / "03_temporal_metrics.ipynb"
    nb.write_text(nb.read_text().replace("What this run shows", "Something else"))
    assert "summary key" in cd.findings_markdown(runs / "03_temporal_metrics")


def test_in_place_blocks_need_their_script(tmp_path):
    root = tmp_path / "repo"
    (root / "docs" / "generated").mkdir(parents=True)
    (root / "docs" / "p.md").write_text("<!-- BEGIN generated: t -->\nx\n<!-- END generated: t -->\n")
    assert "has no file docs/generated/t.md" in cd.check(root)[0]
    (root / "docs" / "guide.yaml").write_text("in_place: {t: benchmarks/t.py}\n")
    assert "benchmarks/t.py" in cd.check(root)[0] and "does not exist" in cd.check(root)[0]
    (root / "benchmarks").mkdir()
    (root / "benchmarks" / "t.py").write_text("")
    assert cd.check(root) == []


def test_regenerate_fills_blocks_and_check_finds_stale_ones(tmp_path, monkeypatch):
    root = tmp_path / "repo"
    (root / "docs" / "generated").mkdir(parents=True)
    (root / "docs" / "guide.yaml").write_text("key_numbers:\n  03_temporal_metrics:\n    TAS: learners.erm.tas\n")
    runs = tmp_path / "runs"
    _executed(runs, "03_temporal_metrics", "The closing text.")
    pd.DataFrame([{"notebook": "03_temporal_metrics", "learners.erm.tas": 0.5}]).to_csv(runs / "summary.csv",
                                                                                        index=False)
    page = root / "docs" / "index.md"
    page.write_text("# Guide\n\nSee `<!-- BEGIN generated: NAME -->` in prose.\n\n"
                    "<!-- BEGIN generated: findings-03_temporal_metrics -->\nstale\n"
                    "<!-- END generated: findings-03_temporal_metrics -->\n")
    (root / "README.md").write_text("# x\n")
    assert cd.check(root) == ["docs/index.md: block 'findings-03_temporal_metrics' has no file "
                              "docs/generated/findings-03_temporal_metrics.md"]
    changed = cd.regenerate(root, runs, log=lambda line: None)
    assert changed == [page] and cd.check(root) == []
    body = cd.blocks(page.read_text())["findings-03_temporal_metrics"]
    assert "The closing text." in body and "| TAS | 0.5 |" in body
    assert body == (root / "docs" / "generated" / "findings-03_temporal_metrics.md").read_text()
    assert (root / "docs" / "generated" / "run-times.md").exists()
    page.write_text(page.read_text().replace("The closing text.", "A hand edit."))
    assert cd.check(root) == ["docs/index.md: block 'findings-03_temporal_metrics' differs from "
                              "docs/generated/findings-03_temporal_metrics.md (run `make docs`)"]
    page.write_text(page.read_text() + "<!-- BEGIN generated: run-times -->\n")
    with pytest.raises(ValueError, match=r"\['run-times'\] have no matching"):
        cd.check(root)


# --------------------------------------------------------------------------- the site

def test_site_builds_the_guide_with_navigation_and_missing_pages_named(tmp_path, monkeypatch):
    from clkit.site import build_site

    runs = tmp_path / "runs"
    _executed(runs, "03_temporal_metrics", "Closing.")
    docs = tmp_path / "docs"
    (docs / "images").mkdir(parents=True)
    (docs / "images" / "pic.png").write_bytes((ROOT / "docs" / "images" / "accuracy-and-transfer.png").read_bytes())
    (docs / "guide.yaml").write_text("sections:\n  - {title: Guide, pages: [index, running, teaching]}\n"
                                     "  - {title: Papers, pages: notebooks}\n")
    (docs / "index.md").write_text("# Overview\n\n[Running](running.md#sweeps), [teaching](teaching.md), "
                                   "[03](03_temporal_metrics.md), [nb](../notebooks/03_temporal_metrics.ipynb), "
                                   "[code](../clkit/site.py).\n\n![p](images/pic.png)\n\nA formula $R_{ij}$.\n")
    (docs / "running.md").write_text("# Running and sweeping\n\n## Sweeps\n\nBack to [the guide](index.md).\n")
    (docs / "notes.md").write_text("No title here.\n")
    readme = tmp_path / "README.md"
    readme.write_text("# clkit\n\nIntro.\n\n![pic](docs/images/pic.png)\n\n## Guide\n\n[Overview](docs/index.md), "
                      "[teaching](docs/teaching.md), [notebook 03](notebooks/03_temporal_metrics.ipynb).\n")
    out = tmp_path / "site"
    res = build_site(runs, out, readme, docs, log=lambda line: None)
    assert res["guide_missing"] == ["teaching", *list_notebooks()]
    assert sorted(res["pages"]) == sorted(["index.html", "03_temporal_metrics.html", "guide/index.html",
                                           "guide/running.html", "guide/notes.html"])
    pages = {p: (out / p).read_text() for p in res["pages"]}
    for name, html in pages.items():
        assert "require" not in html.lower(), name  # no CDN require.js
        depth = "../" if name.startswith("guide/") else ""
        for target in res["pages"]:  # every page reachable from every page
            assert f'href="{depth}{target}"' in html, (name, target)
    guide = pages["guide/index.html"]
    assert 'href="running.html#sweeps"' in guide and 'href="../03_temporal_metrics.html"' in guide
    assert 'src="images/pic.png"' in guide and (out / "guide" / "images" / "pic.png").exists()
    assert "Not written yet" in guide and "docs/teaching.md" in guide
    assert '<span class="repo-path" title="teaching.md in the repository">teaching</span>' in guide
    assert '<span class="repo-path" title="../clkit/site.py in the repository">code</span>' in guide
    assert "$R_{ij}$" in guide and "MathJax" in guide
    assert 'id="sweeps"' in pages["guide/running.html"] and 'href="index.html"' in pages["guide/running.html"]
    index = pages["index.html"]
    assert 'href="guide/index.html"' in index and 'src="guide/images/pic.png"' in index
    assert 'href="03_temporal_metrics.html"' in index and 'id="executed-notebooks"' in index
