"""The tutorial site (``make site``) in headless Chromium: every page loads, every
figure is an image that decodes, no internal link or anchor is broken.

``make site`` runs this on the site built from ``runs/default/`` (``CLKIT_SITE=site``);
``make test`` builds a small site from notebook 03's smoke run. Screenshots of
every page go to ``runs/site-screenshots/``. The site is served on 127.0.0.1 and
requests leaving it are blocked (the test runs offline; the pages' CDN scripts,
MathJax and require.js, are optional: without them formulas show as TeX).
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
    build_site(out.parent, site, bl.ROOT / "README.md", log=lambda *_: None)
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
    return sorted(p.name for p in site_dir.glob("*.html"))


def test_site_has_front_page_and_notebook_pages(site):
    site_dir, runs = site
    pages = _pages(site_dir)
    assert "index.html" in pages
    executed = sorted(p.parent.name for p in runs.glob("*/*.ipynb") if p.stem == p.parent.name)
    assert [p[:-5] for p in pages if p != "index.html"] == executed
    index = (site_dir / "index.html").read_text()
    assert 'id="vocabulary"' in index, "the README's vocabulary is on the front page"
    for nb in executed:
        page = (site_dir / f"{nb}.html").read_text()
        assert f"clkit run {nb[:2]}" in page and f"notebooks/{nb}.ipynb" in page
        assert "widget-view+json" not in page


def test_every_page_loads_with_figures_and_working_links(site, server):
    from playwright.sync_api import sync_playwright

    site_dir, runs = site
    SHOTS.mkdir(parents=True, exist_ok=True)
    problems, external = [], set()
    with sync_playwright() as p:
        browser, page = _offline_page(p, server)
        failed = []
        page.on("requestfailed", lambda r: failed.append(r.url) if r.url.startswith(server) else None)
        for name in _pages(site_dir):
            failed.clear()
            resp = page.goto(f"{server}/{name}", wait_until="load")
            assert resp.status == 200, name
            imgs = page.evaluate("""() => Array.from(document.images)
                .map(i => ({src: i.src.slice(0, 40), w: i.naturalWidth, ok: i.complete}))""")
            bad = [i for i in imgs if not (i["ok"] and i["w"] > 0)]
            if bad:
                problems.append(f"{name}: images that did not load: {bad}")
            if name != "index.html":
                want = _image_outputs(runs / name[:-5] / name.replace(".html", ".ipynb"))
                if len(imgs) != want or not want:
                    problems.append(f"{name}: {len(imgs)} images in the page, {want} in the executed notebook")
            if failed:
                problems.append(f"{name}: failed requests {failed}")
            hrefs = page.evaluate("() => Array.from(document.querySelectorAll('a[href]'))"
                                  ".map(a => a.getAttribute('href'))")
            for href in hrefs:
                problems += _check_link(site_dir, name, href, external)
            page.screenshot(path=str(SHOTS / f"{name[:-5]}.png"), full_page=name == "index.html")
            if imgs and name != "index.html":  # and the first figure, for a person to look at
                page.locator("img").first.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"{name[:-5]}-figure.png"))
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
            if name == "index.html":
                continue
            page.goto(f"{server}/{name}", wait_until="load")
            page.wait_for_function("() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 "
                                   "&& MathJax.Hub.queue.running === 0", timeout=60_000)
            rendered = page.evaluate("() => document.querySelectorAll('.mjx-chtml').length")
            errors = page.evaluate("() => document.querySelectorAll('.mjx-merror, .MathJax_Error').length")
            assert rendered > 0, f"{name}: no formula typeset"
            assert errors == 0, f"{name}: {errors} formulas MathJax could not typeset"
            if name.startswith("03"):
                page.locator(".mjx-chtml").first.scroll_into_view_if_needed()
                page.screenshot(path=str(SHOTS / f"{name[:-5]}-formula.png"))
        browser.close()


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
    target = page if not parsed.path else parsed.path
    path = site_dir / urllib.parse.unquote(target)
    if not path.is_file():
        return [f"{page}: broken link {href!r}"]
    if parsed.fragment and path.suffix == ".html":
        text = path.read_text(encoding="utf-8", errors="replace")
        if not re.search(rf'id=["\']{re.escape(parsed.fragment)}["\']', text):
            return [f"{page}: link {href!r}: no anchor #{parsed.fragment} in {target}"]
    return []
