"""The tutorial site (``make site``) in headless Chromium: the front page, every guide page
and every notebook page loads with no console error and no request leaving the site,
every figure is an image that decodes, every formula typesets (with a local MathJax),
no internal link or anchor is broken.

``make site`` runs this on the site built from ``runs/default/`` and ``docs/``
(``CLKIT_SITE=site``); ``make test`` builds a small site from notebook 03's smoke run and
the repository's guide. Screenshots of every page go to ``runs/site-screenshots/``. The
site is served on 127.0.0.1 and every request leaving it is refused and counted as a
problem (issue 28: require.js used to be fetched from a CDN).
"""

from __future__ import annotations

import functools
import json
import os
import re
import threading
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import browser_lab as bl

pytestmark = pytest.mark.browser

REASON = bl.missing_reason()
if REASON:
    pytest.skip(f"site browser test not run: {REASON}", allow_module_level=True)

SHOTS = bl.ROOT / "runs" / "site-screenshots"


@pytest.fixture(scope="module")
def site(tmp_path_factory, run_smoke):
    """(site folder, runs folder): ``$CLKIT_SITE`` as built by ``make site``, else a site
    built here from notebook 03's smoke run."""
    from clkit.site import build_site

    env = os.environ.get("CLKIT_SITE")
    if env:
        runs = Path(os.environ.get("CLKIT_SITE_RUNS", "runs/default"))
        return Path(env), runs
    _, out = run_smoke("03_temporal_metrics")
    site = tmp_path_factory.mktemp("site") / "site"
    build_site(out.parent, site, bl.ROOT / "README.md", bl.ROOT / "docs", log=lambda *_: None)
    return site, out.parent


@pytest.fixture(scope="module")
def server(site):
    handler = functools.partial(_QuietHandler, directory=str(site[0]))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _pages(site_dir: Path) -> list[str]:
    """Site paths of every page: the front page, the notebook pages, ``guide/*.html``."""
    return sorted(p.relative_to(site_dir).as_posix() for p in [*site_dir.glob("*.html"), *site_dir.glob("guide/*.html")])


def _is_notebook_page(name: str) -> bool:
    return name != "index.html" and "/" not in name


def test_site_has_front_page_and_notebook_pages(site):
    site_dir, runs = site
    pages = _pages(site_dir)
    assert "index.html" in pages and "guide/index.html" in pages
    executed = sorted(p.parent.name for p in runs.glob("*/*.ipynb") if p.stem == p.parent.name)
    assert [p[:-5] for p in pages if _is_notebook_page(p)] == executed
    assert 'id="vocabulary"' in (site_dir / "guide" / "index.html").read_text(), "the vocabulary is in the guide"
    docs = Path(os.environ.get("CLKIT_SITE_DOCS", bl.ROOT / "docs"))
    for md in docs.glob("*.md"):
        assert f"guide/{md.stem}.html" in pages, f"{md} is not in the site"
    for name in pages:
        html = (site_dir / name).read_text()
        assert "require.min.js" not in html and "cdnjs" not in html, f"{name} loads a script from a CDN"
    for nb in executed:
        page = (site_dir / f"{nb}.html").read_text()
        assert f"clkit run {nb[:2]}" in page and f"notebooks/{nb}.ipynb" in page
        assert "widget-view+json" not in page
        # no path of the machine that built it, no warning printed by a library
        assert str(bl.ROOT) + "/" not in page, f"{nb}.html shows a path of this machine"
        assert "FutureWarning" not in page and "DeprecationWarning" not in page, f"{nb}.html shows a warning"


def test_every_page_loads_with_figures_and_working_links(site, server):
    from playwright.sync_api import sync_playwright

    site_dir, runs = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems, external = [], set()
    with sync_playwright() as p:
        browser, page = _offline_page(p, server)
        failed, outside, console = [], [], []
        page.on("requestfailed", lambda r: (failed if r.url.startswith(server) else outside).append(r.url))
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(str(e)))
        for name in _pages(site_dir):
            failed.clear(), outside.clear(), console.clear()
            resp = page.goto(f"{server}/{name}", wait_until="load")
            assert resp.status == 200, name
            page.wait_for_timeout(300)  # scripts that run after load
            imgs = page.evaluate("""() => Array.from(document.images)
                .map(i => ({src: i.src.slice(0, 40), w: i.naturalWidth, ok: i.complete}))""")
            bad = [i for i in imgs if not (i["ok"] and i["w"] > 0)]
            if bad:
                problems.append(f"{name}: images that did not load: {bad}")
            if _is_notebook_page(name):
                want = _image_outputs(runs / name[:-5] / name.replace(".html", ".ipynb"))
                if len(imgs) != want or not want:
                    problems.append(f"{name}: {len(imgs)} images in the page, {want} in the executed notebook")
            if failed:
                problems.append(f"{name}: failed requests {failed}")
            if outside:
                problems.append(f"{name}: requests outside the site {outside}")
            if console:
                problems.append(f"{name}: console errors {console}")
            hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a[href]'))"
                                  ".map(a => a.getAttribute('href'))")
            for href in hrefs:
                problems += _check_link(site_dir, name, href, external)
            shot = name[:-5].replace("/", "-")
            page.screenshot(path=str(SHOTS / f"{shot}.png"), full_page=not _is_notebook_page(name))
            if imgs and _is_notebook_page(name):  # and the first figure, for a person to look at
                page.locator("img").first.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"{shot}-figure.png"))
        browser.close()
    print(f"\n[site] {len(_pages(site_dir))} pages checked; {len(external)} external links not fetched "
          f"(offline); screenshots in {SHOTS}")
    assert not problems, "\n".join(problems)


def test_formulas_render_offline_with_a_local_mathjax(site, server):
    """With a local MathJax copied into the site, every notebook page typesets its formulas with
    no network (requests outside the local server are refused)."""
    from playwright.sync_api import sync_playwright

    site_dir, _ = site
    if not (site_dir / "mathjax" / "MathJax.js").exists():
        pytest.skip("the site was built without a local MathJax (apt-get install libjs-mathjax, or "
                    "CLKIT_MATHJAX); its formulas come from the CDN")
    with sync_playwright() as p:
        browser, page = _offline_page(p, server)
        for name in _pages(site_dir):
            page.goto(f"{server}/{name}", wait_until="load")
            page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 "
                                   "&& MathJax.Hub.queue.running === 0", timeout=60_000)
            rendered = page.evaluate("() => document.querySelectorAll('.mjx-chtml').length")
            errors = page.evaluate("() => document.querySelectorAll('.mjx-merror, .MathJax_Error').length")
            raw = page.evaluate(RAW_TEX)
            if _is_notebook_page(name) or name == "guide/index.html":  # pages known to hold formulas
                assert rendered > 0, f"{name}: no formula typeset"
            assert errors == 0, f"{name}: {errors} formulas MathJax could not typeset"
            assert not raw, f"{name}: a formula left as TeX: {raw}"
            if name.startswith("03") or name == "guide/index.html":
                page.locator(".mjx-chtml").first.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"{name[:-5].replace('/', '-')}-formula.png"))
        browser.close()


# prose left with $...$ after MathJax ran (code, preformatted text and scripts left out)
RAW_TEX = """() => {
  const main = document.querySelector('main') || document.body;
  const copy = main.cloneNode(true);
  copy.querySelectorAll('code, pre, script, style, .jp-OutputArea').forEach(e => e.remove());
  const m = copy.textContent.match(/\\$[^$\\s][^$]{0,80}\\$/);
  return m ? m[0] : null;
}"""


def _offline_page(p, server):
    """A Chromium page that may fetch only from the local ``server`` (everything else is refused)."""
    browser = bl.launch_browser(p)
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.route("**/*", lambda route: route.continue_() if route.request.url.startswith(server) else route.abort())
    return browser, ctx.new_page()


def _image_outputs(path: Path) -> int:
    """Image outputs (figures) stored in an executed notebook."""
    nb = json.loads(path.read_text())
    return sum(any(k.startswith("image/") for k in out.get("data", {}))
               for c in nb["cells"] if c["cell_type"] == "code" for out in c["outputs"])


def _check_link(site_dir: Path, page: str, href: str, external: set) -> list[str]:
    parsed = urllib.parse.urlparse(href)
    if parsed.scheme in ("http", "https", "mailto"):
        external.add(href)
        return []
    target = page if not parsed.path else (Path(page).parent / urllib.parse.unquote(parsed.path)).as_posix()
    path = (site_dir / target).resolve()
    if not path.is_file():
        return [f"{page}: broken link {href!r}"]
    if parsed.fragment and path.suffix == ".html":
        text = path.read_text(encoding="utf-8", errors="replace")
        if not re.search(rf'id=["\']{re.escape(parsed.fragment)}["\']', text):
            return [f"{page}: link {href!r}: no anchor #{parsed.fragment} in {target}"]
    return []
