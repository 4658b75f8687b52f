"""A static HTML site: the user guide and the notebooks as executed by ``make run`` (``make site``).

Usage::

    python -m clkit.site [--runs runs/default] [--out site] [--readme README.md] [--docs docs]

Nothing is re-executed: each notebook page is the executed notebook from
``RUNS/<notebook>/<notebook>.ipynb`` rendered with nbconvert's JupyterLab
template (figures embedded in the page, tables as HTML), headed by how to run it
(``clkit run ...`` and JupyterLab), the parameters and the run time from
``run.json``. The README is the front page (``index.html``); the user guide's
Markdown pages (``docs/*.md``) become ``guide/<page>.html``, in the order and
sections of ``docs/guide.yaml``; a page listed there but not written yet is
named as missing on the guide's overview and in the build log, never a broken
link. Every page carries the same navigation bar, so every page is reachable
from every page. Links between the pages, to notebooks and to ``docs/images/``
are rewritten to the site's files; links to other files of the repository become
plain text (the site stands alone). The executed notebooks are copied under
``notebooks/`` for download.

Offline: formulas ($...$ in the guide as in the notebooks) are typeset by
MathJax 2.7. nbconvert's template loads it from a CDN; when a local MathJax 2.7
is found (``$CLKIT_MATHJAX``, else Debian's ``libjs-mathjax`` in
``/usr/share/javascript/mathjax``; ``make site`` installs it when run as root),
the parts its configuration loads (about 1.5 MB) are copied under ``mathjax/``
and every page uses them. The template's require.js (loaded from a CDN, needed
only by widget and AMD JavaScript outputs, which these pages do not carry: widget
views are dropped, their text kept) is left out, and so is its Mermaid loader (a
script importing Mermaid from a CDN when a page has a Mermaid diagram, which no
notebook has), so a page makes no request outside the site and names no CDN.

Why nbconvert: it is Jupyter's own, maintained converter, already installed with
JupyterLab and papermill, renders stored outputs as they are, so the site cannot
drift from the run, and its Markdown renderer keeps formulas for MathJax. Sphinx
with myst-nb or Jupyter Book would add a documentation toolchain (and, for
Jupyter Book 2, Node.js) for a README, a dozen guide pages and six notebooks.
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
 padding:8px 24px;margin:0 0 8px 0}
.clkit-nav a{margin-right:12px;white-space:nowrap;color:#0969da;text-decoration:underline}
.clkit-nav .sec{color:#57606a;margin-right:6px}
.clkit-nav .sep{display:inline-block;width:10px}
.clkit-nav .here{font-weight:600}
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
.highlight pre{background:#f6f8fa}
table{border-collapse:collapse;margin:12px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;vertical-align:top}
img{max-width:100%}
.clkit-notebooks td{font-size:95%}
.repo-path{font-family:monospace;font-size:90%}
.missing{color:#9a6700}
a.anchor-link{visibility:hidden;margin-left:4px;text-decoration:none}
h1:hover a.anchor-link,h2:hover a.anchor-link,h3:hover a.anchor-link,h4:hover a.anchor-link{visibility:visible}
"""

#: the guide's layout file (sections and the order of their pages)
GUIDE_FILE = "guide.yaml"


def slug(text: str, seen: dict | None = None) -> str:
    """Anchor id of a heading, as GitHub makes it (so guide links work on GitHub and in the site).

    Lower case; tags and punctuation other than ``-`` and ``_`` removed; spaces become
    ``-``. With ``seen`` (one dict per page), a repeated heading gets ``-1``, ``-2``, ...

    >>> slug("Running one notebook with other parameters")
    'running-one-notebook-with-other-parameters'
    >>> slug("Sweeps & scaling out"), slug("<code>clkit run</code>, step 2")
    ('sweeps--scaling-out', 'clkit-run-step-2')
    >>> seen = {}
    >>> slug("Data", seen), slug("Data", seen)
    ('data', 'data-1')
    """
    text = html.unescape(re.sub(r"<[^>]+>", "", text)).strip().lower()
    base = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
    if seen is None:
        return base
    n = seen.get(base, 0)
    seen[base] = n + 1
    return base if n == 0 else f"{base}-{n}"


def _rewrite_links(body: str, resolve) -> str:
    """Rewrite every ``href`` / ``src`` with ``resolve(url)``: a new URL, or ``None`` for a path the
    site does not have (the link becomes plain text naming the repository path)."""

    def keep(url: str) -> bool:
        return bool(re.match(r"^(https?:|mailto:|data:|#)", url))

    def repl_a(m):
        href, text = html.unescape(m.group(1)), m.group(2)
        if keep(href):
            return m.group(0)
        new = resolve(href)
        if new is None:
            return f'<span class="repo-path" title="{html.escape(href)} in the repository">{text}</span>'
        return f'<a href="{html.escape(new)}">{text}</a>'

    def repl_img(m):
        src = html.unescape(m.group(2))
        new = src if keep(src) else resolve(src)
        return f'{m.group(1)}{html.escape(new if new is not None else src)}{m.group(3)}'

    body = re.sub(r'<a href="([^"]*)">(.*?)</a>', repl_a, body, flags=re.S)
    return re.sub(r'(<img[^>]*\ssrc=")([^"]*)(")', repl_img, body)


def render_markdown(text: str, resolve=None) -> str:
    """Markdown to HTML with nbconvert's renderer (formulas kept for MathJax, tables, code
    highlighted), headings with GitHub's anchors, links rewritten by ``resolve`` (see
    :func:`_rewrite_links`; default: unchanged).

    >>> print(render_markdown("## Two commands\\n\\nSee [03](../notebooks/03_x.ipynb), $x_i$.",
    ...                       lambda u: "03_x.html" if u.endswith("03_x.ipynb") else None))
    <h2 id="two-commands">Two commands<a class="anchor-link" href="#two-commands">&#182;</a></h2><p>See <a href="03_x.html">03</a>, $x_i$.</p>
    """
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    body = markdown2html_mistune(text).strip()
    seen: dict = {}

    def heading(m):
        level, inner = m.group(1), m.group(2)
        anchor = slug(inner, seen)
        return f'<h{level} id="{anchor}">{inner}<a class="anchor-link" href="#{anchor}">&#182;</a></h{level}>'

    body = re.sub(r'<h([1-6]) id="[^"]*">(.*?)<a class="anchor-link" href="#[^"]*">&#182;</a></h\1>', heading, body,
                  flags=re.S)
    return _rewrite_links(body, resolve or (lambda url: url))


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


def machine_prefixes(project=None) -> list[tuple[str, str]]:
    """``(absolute prefix, what the site shows instead)`` for this machine's paths, longest first:
    :func:`clkit.data._reads.machine_folders` as text (a run's manifest names files the same way).

    Examples
    --------
    >>> pairs = machine_prefixes("/home/ann/clkit")
    >>> ("/home/ann/clkit/", "") in pairs and all(a.endswith("/") for a, _ in pairs)
    True
    """
    from .data._reads import machine_folders

    pairs = [(str(folder).rstrip("/") + "/", f"{shown}/" if shown else "") for folder, shown in machine_folders(project)]
    return sorted(dict.fromkeys(pairs), key=lambda kv: -len(kv[0]))


def _without_machine_paths(nb, prefixes):
    """Replace this machine's absolute paths in every output (streams, tracebacks, text, HTML,
    Markdown) by the relative or named forms of :func:`machine_prefixes`."""

    def clean(text):
        if isinstance(text, list):
            return [clean(t) for t in text]
        if not isinstance(text, str):
            return text
        for prefix, repl in prefixes:
            text = text.replace(prefix, repl)
        return text

    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if "text" in out:
                out["text"] = clean(out["text"])
            if "traceback" in out:
                out["traceback"] = clean(out["traceback"])
            for mime in ("text/plain", "text/html", "text/markdown", "text/latex"):
                if mime in out.get("data", {}):
                    out["data"][mime] = clean(out["data"][mime])
    return nb


def _run_box(stem: str, meta: dict, nav: str, guide_link: str = "") -> str:
    num = stem.split("_", 1)[0]
    params = meta.get("params", {})
    shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in params.items())
    # an override the notebook takes: its seed where it has one, else its first parameter as run
    example = ("seed 1" if "seed" in params else
               next((f"{k} {v}" for k, v in params.items() if isinstance(v, (str, int, float)) and " " not in str(v)),
                    "NAME VALUE"))
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
clkit run {num} -p {html.escape(example):<22} # any parameter: -p NAME VALUE</pre>
or interactively: <code>jupyter lab notebooks/{stem}.ipynb</code>, edit the parameters cell, then
<i>Run &rarr; Run All Cells</i>. Download this executed notebook:
<a href="notebooks/{stem}.ipynb">{stem}.ipynb</a>. {guide_link}
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


def _md_title(path: Path) -> str | None:
    m = re.search(r"^#\s+(.+?)\s*#*\s*$", path.read_text(encoding="utf-8"), re.M)
    return m.group(1).strip() if m else None


def load_guide(docs, notebooks) -> list[dict]:
    """The guide's sections from ``docs/guide.yaml``: ``[{"title", "pages": [page, ...]}]``.

    A page is ``{"stem", "title", "label", "path"}``, ``path`` being ``None`` for a page
    listed but not written yet. In the YAML file a section's ``pages`` is a list of
    page stems (``docs/<stem>.md``), or ``notebooks`` (one page per notebook,
    ``docs/<notebook stem>.md``, labelled by its number); ``glob`` adds the pages
    whose file names match (e.g. ``benchmarks-*``). Pages of ``docs/`` in no
    section are added under "More". Without the file, every page is listed by name.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "guide.yaml").write_text("sections:\\n- {title: Guide, pages: [index, teaching]}\\n"
    ...                                  "- {title: Papers, pages: notebooks}\\n- {title: Benchmarks, glob: 'bench-*'}\\n")
    >>> for name, text in {"index": "# Overview", "bench-x": "# X speed", "notes": "no title"}.items():
    ...     _ = (d / f"{name}.md").write_text(text)
    >>> [(sec["title"], [(p["stem"], p["label"], p["path"] is not None) for p in sec["pages"]])
    ...  for sec in load_guide(d, ["01_a"])]  # doctest: +NORMALIZE_WHITESPACE
    [('Guide', [('index', 'Overview', True), ('teaching', 'teaching', False)]),
     ('Papers', [('01_a', '01', False)]), ('Benchmarks', [('bench-x', 'X speed', True)]),
     ('More', [('notes', 'notes', True)])]
    """
    import fnmatch

    import yaml

    docs = Path(docs)
    files = {p.stem: p for p in sorted(docs.glob("*.md"))} if docs.is_dir() else {}
    spec_path = docs / GUIDE_FILE
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8")) if spec_path.exists() else {}
    sections, placed = [], set()

    def page(stem: str, label: str | None = None) -> dict:
        path = files.get(stem)
        title = (_md_title(path) if path else None) or stem
        placed.add(stem)
        return {"stem": stem, "title": title, "label": label or title, "path": path}

    for sec in (spec or {}).get("sections", []):
        if not isinstance(sec, dict) or "title" not in sec:
            raise ValueError(f"{spec_path}: each section needs a title and pages or a glob, got {sec!r}")
        pages = []
        listed = sec.get("pages") or []
        if listed == "notebooks":
            pages += [page(nb, nb.split("_", 1)[0]) for nb in notebooks]
        elif isinstance(listed, list):
            pages += [page(str(stem)) for stem in listed]
        else:
            raise ValueError(f"{spec_path}: section {sec['title']!r}: pages must be a list of page names or "
                             f"'notebooks', got {listed!r}")
        if sec.get("glob"):
            pages += [page(stem) for stem in files if fnmatch.fnmatch(stem, sec["glob"]) and stem not in placed]
        sections.append({"title": str(sec["title"]), "pages": pages})
    rest = [page(stem) for stem in files if stem not in placed]
    if rest:
        sections.append({"title": "More", "pages": rest})
    return sections


def _nav(sections: list[dict], executed: dict[str, str], depth: int, here: str) -> str:
    """The navigation bar: the front page, every written guide page and every executed notebook.
    ``depth`` 0 for pages at the site's root, 1 for ``guide/``; ``here`` the page's own site path."""
    up = "../" * depth

    def link(target: str, label: str, title: str = "") -> str:
        cls = ' class="here"' if target == here else ""
        tip = f' title="{html.escape(title)}"' if title and title != label else ""
        return f'<a href="{up}{target}"{cls}{tip}>{html.escape(label)}</a>'

    parts = [link("index.html", "clkit")]
    for sec in sections:
        links = [link(f"guide/{p['stem']}.html", p["label"], p["title"]) for p in sec["pages"] if p["path"]]
        if links:
            parts.append(f'<span class="sep"></span><span class="sec">{html.escape(sec["title"])}:</span>'
                         + "".join(links))
    if executed:
        parts.append('<span class="sep"></span><span class="sec">Executed notebooks:</span>'
                     + "".join(link(page, nb.split("_", 1)[0], nb) for nb, page in executed.items()))
    return "".join(parts)


def _resolver(page_dir: str, src_dir: str, targets: dict[str, str]):
    """``resolve(url)`` for a page written to ``page_dir`` (``""`` or ``"guide"``) from a Markdown
    file in the repository folder ``src_dir``: repository paths in ``targets`` map to site paths."""
    import posixpath

    def resolve(url: str) -> str | None:
        path, _, frag = url.partition("#")
        repo = posixpath.normpath(posixpath.join(src_dir, path)) if path else None
        if repo is None:
            return url
        target = targets.get(repo)
        if target is None:
            return None
        rel = posixpath.relpath(target, page_dir or ".")
        return rel + (f"#{frag}" if frag else "")

    return resolve


def _shell(title: str, nav: str, body: str, head: str = "") -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1.0"><title>{html.escape(title)}</title>'
            f"<style>{STYLE}{INDEX_STYLE}</style>{head}</head><body><div class=\"clkit-nav\">{nav}</div>"
            f"<main>{body}</main></body></html>")


def _highlight_css() -> str:
    from pygments.formatters import HtmlFormatter

    return f"<style>{HtmlFormatter().get_style_defs('.highlight')}</style>"


def build_site(runs="runs/default", out="site", readme="README.md", docs="docs", log=print) -> dict:
    """Build the site; returns ``{"pages": [...], "missing": [...], "guide_missing": [...], "mathjax": ...}``.

    ``pages`` are the site paths written (``index.html``, the notebook pages, ``guide/*.html``);
    ``missing`` the notebooks without an executed run; ``guide_missing`` the guide pages listed in
    ``docs/guide.yaml`` but not written yet; ``mathjax`` ``"local"`` or ``"cdn"``.

    Raises ``ValueError`` when ``runs`` holds no executed notebook.
    """
    import jinja2
    import nbformat
    from nbconvert import HTMLExporter

    prefixes = machine_prefixes()   # no absolute path of this machine on the site

    from .run import list_notebooks

    runs, out, docs = Path(runs), Path(out), Path(docs)
    notebooks = list_notebooks()
    found = {nb: runs / nb / f"{nb}.ipynb" for nb in notebooks if (runs / nb / f"{nb}.ipynb").exists()}
    missing = [nb for nb in notebooks if nb not in found]
    if not found:
        raise ValueError(f"runs: no executed notebook under {runs} (looked for {runs}/<notebook>/<notebook>.ipynb); "
                         "run `make run` (or clkit run all --out DIR) first")
    sections = load_guide(docs, notebooks)
    guide = [p for sec in sections for p in sec["pages"]]
    guide_missing = [p["stem"] for p in guide if p["path"] is None]
    if out.exists():
        shutil.rmtree(out)
    (out / "notebooks").mkdir(parents=True)
    pages = {nb: f"{nb}.html" for nb in found}
    # repository path -> site path, for the links of every page
    targets = {"README.md": "index.html"}
    for nb, page in pages.items():
        targets[f"notebooks/{nb}.ipynb"] = targets[f"notebooks/{nb}.py"] = page
    for p in guide:
        if p["path"] is not None:
            targets[f"docs/{p['stem']}.md"] = f"guide/{p['stem']}.html"
    if (docs / "images").is_dir():
        shutil.copytree(docs / "images", out / "guide" / "images")
        for f in (docs / "images").rglob("*"):
            if f.is_file():
                rel = f.relative_to(docs / "images").as_posix()
                targets[f"docs/images/{rel}"] = f"guide/images/{rel}"

    mathjax = local_mathjax()
    # nbconvert's lab template, without the CDN require.js and Mermaid loader (see the module docstring)
    no_require = jinja2.DictLoader({"clkit.html.j2": "{%- extends 'index.html.j2' -%}{% block html_head_js_requirejs %}"
                                                     "{% endblock html_head_js_requirejs %}"
                                                     "{% block html_head_js_mermaidjs %}{% endblock html_head_js_mermaidjs %}"})
    if mathjax is not None:
        _copy_mathjax(mathjax, out)
        exporter = HTMLExporter(template_name="lab", mathjax_url=f"mathjax/MathJax.js?config={MATHJAX_CONFIG}")
        log(f"[site] MathJax: local copy of {mathjax} (formulas render offline)")
    else:
        exporter = HTMLExporter(template_name="lab")
        log("[site] MathJax: from the CDN (offline, formulas show as TeX); for a local copy install "
            "libjs-mathjax (apt-get install libjs-mathjax) or set CLKIT_MATHJAX")
    exporter.extra_loaders = [no_require]
    exporter.template_file = "clkit.html.j2"

    def mathjax_head(prefix: str) -> str:
        url = exporter.mathjax_url if mathjax is None else f"{prefix}{exporter.mathjax_url}"
        head = exporter.environment.from_string("{% from 'mathjax.html.j2' import mathjax %}{{ mathjax(url) }}")
        return _no_linebreaks(head.render(url=url))

    rows = []
    for nb, path in found.items():
        doc = _without_machine_paths(_without_widgets(nbformat.read(str(path), as_version=4)), prefixes)
        meta_path = path.parent / "run.json"
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        body, _ = exporter.from_notebook_node(doc, resources={"metadata": {"name": _title(doc) or nb}})
        body = body.replace("</head>", f"<style>{STYLE}</style></head>", 1)
        body = _no_linebreaks(body)
        guide_link = (f'The choices and findings behind it: <a href="guide/{nb}.html">the guide\'s page on {nb}</a>.'
                      if f"docs/{nb}.md" in targets else "")
        box = _run_box(nb, meta, _nav(sections, pages, 0, pages[nb]), guide_link)
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + box, body, count=1)
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

    css = _highlight_css()
    written = []
    for p in guide:
        if p["path"] is None:
            continue
        here = f"guide/{p['stem']}.html"
        body = render_markdown(p["path"].read_text(encoding="utf-8"), _resolver("guide", "docs", targets))
        if p["stem"] == "index" and guide_missing:
            body += ("<h2 id=\"not-written-yet\">Not written yet</h2><p class=\"missing\">"
                     + ", ".join(f"<code>docs/{html.escape(s)}.md</code>" for s in guide_missing) + "</p>")
        (out / here).parent.mkdir(parents=True, exist_ok=True)
        (out / here).write_text(_shell(f"{p['title']} - clkit", _nav(sections, pages, 1, here), body,
                                       css + mathjax_head("../")), encoding="utf-8")
        written.append(here)
        log(f"[site] {here}")
    if guide_missing:
        log(f"[site] guide pages not written yet (listed in {docs / GUIDE_FILE}): "
            + ", ".join(f"{docs}/{s}.md" for s in guide_missing))

    readme = Path(readme)
    readme_html = render_markdown(readme.read_text(encoding="utf-8"), _resolver("", "", targets)) \
        if readme.exists() else ""
    table = ("<h2 id=\"executed-notebooks\">Executed notebooks</h2>\n<p>Each page shows the notebook as "
             "<code>make run</code> executed it, with how to run it yourself.</p>\n"
             "<table class=\"clkit-notebooks\"><tr><th>notebook</th><th>paper</th><th>run</th><th>headless</th></tr>"
             + "".join(rows) + "</table>")
    # the table goes right after the README's first paragraph block (before its first h2)
    idx = readme_html.find("<h2")
    body = readme_html[:idx] + table + readme_html[idx:] if idx >= 0 else readme_html + table
    (out / "index.html").write_text(_shell("clkit", _nav(sections, pages, 0, "index.html"), body,
                                           css + mathjax_head("")), encoding="utf-8")
    log(f"[site] index.html ({len(found)} notebook page(s), {len(written)} guide page(s)"
        f"{'; not run: ' + ', '.join(missing) if missing else ''})")
    return {"pages": ["index.html", *pages.values(), *written], "missing": missing, "guide_missing": guide_missing,
            "mathjax": "cdn" if mathjax is None else "local"}


def _no_linebreaks(page: str) -> str:
    """nbconvert's MathJax configuration breaks long formulas automatically, which typesets a
    formula in a table cell one symbol per line; JupyterLab does not break them either."""
    return re.sub(r"(CommonHTML:\s*\{\s*linebreaks:\s*\{\s*automatic:\s*)true", r"\1false", page, count=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m clkit.site", description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", default="runs/default", help="folder of `make run` (default: runs/default)")
    ap.add_argument("--out", default="site", help="output folder, replaced (default: site)")
    ap.add_argument("--readme", default="README.md", help="front page (default: README.md)")
    ap.add_argument("--docs", default="docs", help="the user guide's Markdown pages (default: docs)")
    args = ap.parse_args(argv)
    try:
        res = build_site(args.runs, args.out, args.readme, args.docs)
    except ValueError as exc:
        print(f"[site] ERROR: {exc}", file=sys.stderr)
        return 1
    print(f"[site] open {Path(args.out) / 'index.html'}")
    return 1 if not res["pages"] else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
