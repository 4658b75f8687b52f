"""The notebooks as a person meets them: JupyterLab in a real (headless) browser.

For each notebook: opening the committed notebook leaves it unmodified (no dirty
flag, no save prompt on close, both files of the pair byte-identical), and Run All
of its smoke copy finishes without an error output, renders the figures the run
records, writes its results under the working directory, and, saved and reopened
with a fresh kernel, shows no "Error displaying widget".

``make test`` runs notebook 03 (the fastest smoke run); ``make browser-test`` runs
all of them (``CLKIT_BROWSER_NOTEBOOKS=all``, or a list such as ``01,03``).
Without Playwright or Chromium these tests are reported as skipped with the reason
(``make browser-deps`` installs both where it can). Screenshots go to
``runs/browser-screenshots/``.
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

import browser_lab as bl

pytestmark = pytest.mark.browser

REASON = bl.missing_reason()
if REASON:
    pytest.skip(f"browser tests not run: {REASON}", allow_module_level=True)

from clkit.run import list_notebooks, resolve_notebook  # noqa: E402


def _selected() -> list[str]:
    sel = os.environ.get("CLKIT_BROWSER_NOTEBOOKS", "03").strip()
    return list_notebooks() if sel == "all" else [resolve_notebook(s.strip()) for s in sel.split(",") if s.strip()]


NOTEBOOKS = _selected()
RUN_TIMEOUT_S = float(os.environ.get("CLKIT_BROWSER_TIMEOUT", "900"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    root = bl.prepare_workdir(tmp, NOTEBOOKS)
    with bl.Lab(root, tmp / "jupyter-lab.log") as server:
        yield server


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = bl.launch_browser(p)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_opening_a_notebook_changes_nothing(lab, page, nb):
    pair = [lab.root / "notebooks" / f"{nb}.ipynb", lab.root / "notebooks" / f"{nb}.py"]
    before = [bl.file_hash(p) for p in pair]
    try:
        state = bl.open_notebook(page, lab, f"notebooks/{nb}.ipynb")
        assert state["kernelName"] == "python3", "JupyterLab picked another kernel"
        time.sleep(4)  # JupyterLab updated the metadata ~2 s after the kernel started (issue 15)
        state = page.evaluate(bl.JS_STATE)
        bl.screenshot(page, f"{nb}-opened")
        assert not state["dirty"], f"{nb}.ipynb is marked modified after opening, with no edit"
        bl.close_all(page)
    finally:
        bl.shutdown_kernels(page)
    assert [bl.file_hash(p) for p in pair] == before, "opening and closing changed the files on disk"


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_running_a_tracked_notebook_leaves_git_status_clean(lab, page, nb):
    """Run All in the committed notebook, interrupted once outputs show, then saved: the
    outputs stay in the page, the files on disk stay as committed (clkit.lab's save hook,
    enabled by ``make install``)."""
    if not shutil.which("git"):
        pytest.skip("git is not installed")
    rel = f"notebooks/{nb}.ipynb"
    pair = [lab.root / rel, lab.root / "notebooks" / f"{nb}.py"]
    before = [bl.file_hash(p) for p in pair]
    try:
        bl.open_notebook(page, lab, rel)
        bl.run_all(page)
        deadline = time.time() + 180
        state = page.evaluate(bl.JS_STATE)
        while time.time() < deadline and not any(c["outs"] for c in state["cells"]):
            time.sleep(0.5)
            state = page.evaluate(bl.JS_STATE)
        page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:interrupt')")
        deadline = time.time() + 60
        while time.time() < deadline and state["kernel"] != "idle":
            time.sleep(0.5)
            state = page.evaluate(bl.JS_STATE)
        shown = sum(len(c["outs"]) for c in state["cells"])
        assert shown >= 1, f"{nb}: no output appeared within 180 s of Run All"
        page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
        time.sleep(3)
        state = page.evaluate(bl.JS_STATE)
        bl.screenshot(page, f"{nb}-tracked-saved")
        assert not state["dirty"], f"{nb}: still marked modified after saving"
        assert sum(len(c["outs"]) for c in state["cells"]) == shown, "saving removed the outputs from the page"
    finally:
        bl.shutdown_kernels(page)
        bl.close_all(page)
    assert [bl.file_hash(p) for p in pair] == before, (
        f"{nb}: running and saving changed the tracked files (is clkit.lab's hook enabled? `make install`)")
    assert bl.git(lab.root, "status", "--porcelain", "--untracked-files=no") == ""


@pytest.mark.parametrize("nb", NOTEBOOKS)
def test_run_all_in_jupyterlab(lab, page, nb):
    rel = f"notebooks/{nb}.smoke.ipynb"
    shot = lambda name: bl.screenshot(page, f"{nb}-{name}")  # noqa: E731
    bl.open_notebook(page, lab, rel)
    t0 = time.time()
    bl.run_all(page)
    state = bl.wait_run_finished(page, RUN_TIMEOUT_S, shot=shot)
    print(f"\n[browser] {nb}: Run All finished in {time.time() - t0:.0f} s")
    shot("finished")
    assert not bl.errors(state), f"{nb}: error output: {bl.errors(state)}"
    # results and figures went to the working directory (the project folder), not the package
    res_path = lab.root / "runs" / "interactive" / nb / "results.json"
    assert res_path.exists(), f"{nb} wrote no results under the working directory"
    figures = json.loads(res_path.read_text())["figures"]
    for f in figures:
        assert (lab.root / "figures" / nb / f).stat().st_size > 1000, f
    # every image output of the run is drawn in the page (a notebook may save more
    # figures than it shows, e.g. 04 shows one strategy's matrices and saves all)
    shown = sum("image/png" in o["mimes"] for c in state["cells"] for o in c["outs"])
    images = bl.rendered_images(page)
    assert shown >= 1 and len(images) == shown, f"{len(images)} images drawn, {shown} image outputs"
    assert all(i["complete"] and i["w"] > 0 for i in images), f"an image did not render: {images}"
    assert "Error displaying widget" not in bl.output_text(page)
    # saved and reopened with a new kernel: progress bars read as finished lines
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    time.sleep(2)
    bl.shutdown_kernels(page)
    bl.close_all(page)
    bl.open_notebook(page, lab, rel)
    time.sleep(2)
    text = bl.output_text(page)
    shot("reopened")
    bl.shutdown_kernels(page)
    if "Error displaying widget" in text and "tqdm.auto" in (lab.root / "notebooks" / f"{nb}.py").read_text():
        pytest.xfail(f"{nb} imports tqdm.auto, whose widget bars are lost on reopening: "
                     "use `from clkit.progress import tqdm` (issue 15 item 6)")
    assert "Error displaying widget" not in text and "model not found" not in text.lower()
