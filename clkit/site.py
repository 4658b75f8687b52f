"""A static HTML site of the notebooks as executed by ``make run`` (``make site``).

Usage::

    python -m clkit.site [--runs runs/default] [--out site] [--readme README.md]

Nothing is re-executed: each page is the executed notebook from
``RUNS/<notebook>/<notebook>.ipynb`` rendered with nbconvert's JupyterLab
template (figures embedded in the page, tables as HTML), headed by how to run it
(``clkit run ...`` and JupyterLab), the parameters and the run time from
``run.json``. The README is the front page (its vocabulary included); links to
notebooks point at their pages, links to other files of the repository become
plain text (the site stands alone). The executed notebooks are copied under
``notebooks/`` for download.

Formulas: nbconvert's template loads MathJax 2.7 from a CDN, so offline they show as TeX. When a
local MathJax 2.7 is found (``$CLKIT_MATHJAX``, else Debian's ``libjs-mathjax`` in
``/usr/share/javascript/mathjax``; ``make site`` installs it when run as root), the parts the
template's configuration loads (about 1.5 MB) are copied under ``mathjax/`` and the pages use
them: the site then renders its formulas without a network. The build log says which.

Why nbconvert: it is Jupyter's own, maintained converter, already installed with
JupyterLab and papermill, and renders stored outputs as they are, so the site
cannot drift from the run. Sphinx with myst-nb or Jupyter Book would add a
documentation toolchain (and, for Jupyter Book 2, Node.js) for what is here a
README plus five pages.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import sys
from pathlib import Path

__all__ = ["build_site", "slug", "render_markdown"]

STYLE = """
.clkit-nav{font:14px/1.45 system-ui,sans-serif;background:#f4f6f8;border-bottom:1px solid #d0d7de;
 padding:10px 24px;margin:0 0 8px 0}
.clkit-nav a{margin-right:14px}
.clkit-run{font:14px/1.5 system-ui,sans-serif;max-width:1100px;margin:8px auto 0 auto;padding:8px 16px;
 border:1px solid #d0d7de;border-radius:6px;background:#fbfcfd}
.clkit-run code,.clkit-run pre{background:#eef1f4;padding:1px 4px;border-radius:3px}
.clkit-run pre{padding:6px 8px;overflow-x:auto}
.clkit-failed{border-color:#cf222e;background:#fff5f5}
"""

INDEX_STYLE = """
body{font:16px/1.55 system-ui,-apple-system,sans-serif;margin:0;color:#1f2328}
main{max-width:980px;margin:0 auto;padding:8px 24px 48px 24px}
pre{background:#f6f8fa;padding:10px 12px;overflow-x:auto;border-radius:6px}
code{background:#f6f8fa;padding:1px 4px;border-radius:3px;font-size:90%}
pre code{background:none;padding:0}
table{border-collapse:collapse;margin:12px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top}
.clkit-notebooks td{font-size:95%}
.repo-path{font-family:monospace;font-size:90%}
"""


def slug(text: str) -> str:
    """Anchor id of a heading (GitHub style, simplified).

    >>> slug("Running one notebook with other parameters")
    'running-one-notebook-with-other-parameters'
    >>> slug("Sweeps & scaling out")
    'sweeps-scaling-out'
    """
    text = re.sub(r"<[^>]+>", "", text).lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-")


def _rewrite_links(body: str, pages: dict[str, str]) -> str:
    """Point links to notebooks at their pages; unlink other repository paths."""

    def repl(m):
        href, text = m.group(1), m.group(2)
        if re.match(r"^(https?:|mailto:|#)", href):
            return m.group(0)
        stem = Path(href.split("#")[0]).stem
        if stem in pages:
            return f'<a href="{pages[stem]}">{text}</a>'
        return f'<span class="repo-path" title="{html.escape(href)} in the repository">{text}</span>'

    return re.sub(r'<a href="([^"]*)">(.*?)</a>', repl, body, flags=re.S)


def render_markdown(text: str, pages: dict[str, str] | None = None) -> str:
    """Markdown to HTML (mistune, as nbconvert uses), headings with ``id`` anchors.

    >>> render_markdown("## Two commands\\n\\nSee [03](notebooks/03_x.ipynb).", {"03_x": "03_x.html"})
    '<h2 id="two-commands">Two commands</h2>\\n<p>See <a href="03_x.html">03</a>.</p>\\n'
    """
    import mistune

    md = mistune.create_markdown(plugins=["table", "strikethrough", "url"])
    body = md(text)
    body = re.sub(r"<h([1-6])>(.*?)</h\1>", lambda m: f'<h{m.group(1)} id="{slug(m.group(2))}">{m.group(2)}</h{m.group(1)}>',
                  body)
    return _rewrite_links(body, pages or {})


def _title(nb) -> str:
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            m = re.search(r"^#\s+(.+)$", cell.source, re.M)
            if m:
                return m.group(1).strip()
    return ""


def _without_widgets(nb):
    """Drop widget state and any widget view left in outputs (text/plain kept), so the page
    needs no widget JavaScript from a CDN."""
    nb.metadata.pop("widgets", None)
    view = "application/vnd.jupyter.widget-view+json"
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data and view in data:
                data.pop(view)
                if not data:
                    data["text/plain"] = ""
    return nb


def _run_box(stem: str, meta: dict, nav: str) -> str:
    num = stem.split("_", 1)[0]
    params = meta.get("params", {})
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in params.items())
    failed = meta.get("status") not in (None, "ok")
    status = (f"<b>This run failed:</b> {html.escape(str(meta.get('error')))}<br>" if failed else "")
    runtime = meta.get("runtime_s")
    when = f" on {html.escape(str(meta['finished']))}" if meta.get("finished") else ""
    return f"""<div class="clkit-nav">{nav}</div>
<div class="clkit-run{' clkit-failed' if failed else ''}">{status}
This page is notebook <b>{stem}</b> as executed by <code>clkit run</code> (<code>make run</code>) with the
<b>{html.escape(str(meta.get('params_set', '?')))}</b> parameters{when}
({f'{runtime:.0f} s' if isinstance(runtime, (int, float)) else 'time not recorded'}); nothing was re-run to make it.
<br><b>Run it yourself</b> from the project folder, headless:
<pre>clkit run {num} --params smoke            # about a minute
clkit run {num} --params default          # the run shown here
clkit run {num} -p seed 1                 # any parameter: -p NAME VALUE</pre>
or interactively: <code>jupyter lab notebooks/{stem}.ipynb</code>, edit the parameters cell, then
<i>Run &rarr; Run All Cells</i>. Download this executed notebook:
<a href="notebooks/{stem}.ipynb">{stem}.ipynb</a>.
<details><summary>Parameters of this run</summary><pre>{html.escape(shown)}</pre></details>
</div>"""


#: where a local MathJax 2.7 is looked for (Debian's libjs-mathjax, then its Node.js layout)
MATHJAX_DIRS = ("/usr/share/javascript/mathjax", "/usr/share/nodejs/mathjax-full/es5")
#: what nbconvert's MathJax configuration (TeX-AMS_CHTML-full, Safe) loads
_MATHJAX_PARTS = ("MathJax.js", "config/TeX-AMS_CHTML-full.js", "config/Safe.js", "extensions", "jax/input/TeX",
                  "jax/element", "jax/output/CommonHTML", "fonts/HTML-CSS/TeX/woff")
MATHJAX_CONFIG = "TeX-AMS_CHTML-full,Safe"


def local_mathjax(env=None) -> Path | None:
    """A local MathJax 2.7 folder: ``$CLKIT_MATHJAX`` when set (it must hold one), else the first
    of :data:`MATHJAX_DIRS` that does; ``None`` when there is none.

    Raises ``ValueError`` when ``$CLKIT_MATHJAX`` names a folder without MathJax 2.7.

    Examples
    --------
    >>> local_mathjax({"CLKIT_MATHJAX": "/nonexistent"})
    Traceback (most recent call last):
    ...
    ValueError: CLKIT_MATHJAX='/nonexistent' holds no MathJax 2.7 (looked for MathJax.js and config/TeX-AMS_CHTML-full.js); unset it or point it at a MathJax 2.7 folder (Debian: apt-get install libjs-mathjax)
    """
    env = os.environ if env is None else env

    def complete(d: Path) -> bool:
        return all((d / part).exists() for part in _MATHJAX_PARTS)

    chosen = env.get("CLKIT_MATHJAX")
    if chosen:
        if not complete(Path(chosen)):
            raise ValueError(f"CLKIT_MATHJAX={chosen!r} holds no MathJax 2.7 (looked for MathJax.js and "
                             "config/TeX-AMS_CHTML-full.js); unset it or point it at a MathJax 2.7 folder "
                             "(Debian: apt-get install libjs-mathjax)")
        return Path(chosen)
    return next((Path(d) for d in MATHJAX_DIRS if complete(Path(d))), None)


def _copy_mathjax(src: Path, out: Path) -> None:
    for part in _MATHJAX_PARTS:
        s, d = src / part, out / "mathjax" / part
        d.parent.mkdir(parents=True, exist_ok=True)
        if s.is_dir():
            shutil.copytree(s, d)
        else:
            shutil.copy2(s, d)


def build_site(runs="runs/default", out="site", readme="README.md", log=print) -> dict:
    """Build the site; returns ``{"pages": [...], "missing": [...], "mathjax": "local" | "cdn"}``.

    Raises ``ValueError`` when ``runs`` holds no executed notebook.
    """
    import nbformat
    from nbconvert import HTMLExporter

    from .run import list_notebooks

    runs, out = Path(runs), Path(out)
    found = {nb: runs / nb / f"{nb}.ipynb" for nb in list_notebooks() if (runs / nb / f"{nb}.ipynb").exists()}
    missing = [nb for nb in list_notebooks() if nb not in found]
    if not found:
        raise ValueError(f"runs: no executed notebook under {runs} (looked for {runs}/<notebook>/<notebook>.ipynb); "
                         "run `make run` (or clkit run all --out DIR) first")
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    pages = {nb: f"{nb}.html" for nb in found}
    nav = " ".join([f'<a href="index.html">clkit</a>', '<a href="index.html#vocabulary">Vocabulary</a>']
                   + [f'<a href="{pages[nb]}">{nb.split("_", 1)[0]}</a>' for nb in found])
    mathjax = local_mathjax()
    if mathjax is not None:
        _copy_mathjax(mathjax, out)
        exporter = HTMLExporter(template_name="lab", mathjax_url=f"mathjax/MathJax.js?config={MATHJAX_CONFIG}")
        log(f"[site] MathJax: local copy of {mathjax} (formulas render offline)")
    else:
        exporter = HTMLExporter(template_name="lab")
        log("[site] MathJax: from the CDN (offline, formulas show as TeX); for a local copy install "
            "libjs-mathjax (apt-get install libjs-mathjax) or set CLKIT_MATHJAX")
    rows = []
    for nb, path in found.items():
        doc = _without_widgets(nbformat.read(str(path), as_version=4))
        meta_path = path.parent / "run.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        body, _ = exporter.from_notebook_node(doc, resources={"metadata": {"name": _title(doc) or nb}})
        body = body.replace("</head>", f"<style>{STYLE}</style></head>", 1)
        # nbconvert's MathJax configuration breaks long formulas automatically, which typesets a
        # formula in a table cell one symbol per line; JupyterLab does not break them either
        body = re.sub(r"(CommonHTML:\s*\{\s*linebreaks:\s*\{\s*automatic:\s*)true", r"\1false", body, count=1)
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + _run_box(nb, meta, nav), body, count=1)
        (out / pages[nb]).write_text(body, encoding="utf-8")
        shutil.copy2(path, out / "notebooks" / f"{nb}.ipynb")
        runtime = meta.get("runtime_s")
        rows.append(f'<tr><td><a href="{pages[nb]}">{html.escape(nb)}</a></td><td>{html.escape(_title(doc))}</td>'
                    f'<td>{html.escape(str(meta.get("params_set", "?")))}, '
                    f'{f"{runtime:.0f} s" if isinstance(runtime, (int, float)) else "?"}</td>'
                    f'<td><code>clkit run {nb.split("_", 1)[0]}</code></td></tr>')
        log(f"[site] {pages[nb]}")
    for nb in missing:
        rows.append(f"<tr><td>{html.escape(nb)}</td><td colspan=3>not in {html.escape(str(runs))}: "
                    f"run <code>make run</code></td></tr>")
    readme_html = render_markdown(Path(readme).read_text(encoding="utf-8"), pages) if Path(readme).exists() else ""
    table = ("<h2 id=\"executed-notebooks\">Executed notebooks</h2>\n<p>Each page shows the notebook as "
             "<code>make run</code> executed it, with how to run it yourself.</p>\n"
             "<table class=\"clkit-notebooks\"><tr><th>notebook</th><th>paper</th><th>run</th><th>headless</th></tr>"
             + "".join(rows) + "</table>")
    # the table goes right after the README's first paragraph block (before its first h2)
    idx = readme_html.find("<h2")
    body = readme_html[:idx] + table + readme_html[idx:] if idx >= 0 else readme_html + table
    index = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>clkit</title>"
             f"<style>{STYLE}{INDEX_STYLE}</style></head><body><div class=\"clkit-nav\">{nav}</div>"
             f"<main>{body}</main></body></html>")
    (out / "index.html").write_text(index, encoding="utf-8")
    log(f"[site] index.html ({len(found)} notebook page(s){'; not run: ' + ', '.join(missing) if missing else ''})")
    return {"pages": ["index.html", *pages.values()], "missing": missing,
            "mathjax": "cdn" if mathjax is None else "local"}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m clkit.site", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="runs/default", help="folder of `make run` (default: runs/default)")
    ap.add_argument("--out", default="site", help="output folder, replaced (default: site)")
    ap.add_argument("--readme", default="README.md", help="front page (default: README.md)")
    args = ap.parse_args(argv)
    try:
        res = build_site(args.runs, args.out, args.readme)
    except ValueError as exc:
        print(f"[site] ERROR: {exc}", file=sys.stderr)
        return 1
    print(f"[site] open {Path(args.out) / 'index.html'}")
    return 1 if not res["pages"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
