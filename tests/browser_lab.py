"""Drive JupyterLab in headless Chromium, as a person would (tests/test_browser*.py).

JupyterLab runs from the project's environment on 127.0.0.1 with a random token,
in a throw-away folder holding copies of the notebooks (so nothing a run writes,
and nothing JupyterLab might save, touches the checkout). The browser is Debian's
``chromium`` driven by Playwright through ``executable_path``: no browser is
downloaded (``playwright install`` is never needed).

Lab settings for the test: autosave off (a run never saves by itself), all cells
rendered (``windowingMode: none``, so figures can be counted in the page), no
news or update checks (offline), and the app exposed as ``window.jupyterapp`` so
the test can read the notebook's model (execution counts, outputs, dirty flag).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "runs" / "browser-screenshots"

LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


def find_chromium() -> str | None:
    """Path of a Chromium binary: ``$CLKIT_CHROMIUM``, else ``chromium`` on PATH."""
    env = os.environ.get("CLKIT_CHROMIUM")
    if env:
        return env if Path(env).exists() else None
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def missing_reason() -> str | None:
    """Why the browser tests cannot run here, or ``None`` when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[test]')"
    if find_chromium() is None:
        return "chromium not found (make browser-deps installs it with apt when root; or set CLKIT_CHROMIUM)"
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        return "jupyterlab is not installed"
    return None


def file_hash(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A JupyterLab server on 127.0.0.1 serving ``root``; use as a context manager."""

    def __init__(self, root: Path, log: Path):
        self.root = Path(root)
        self.log = Path(log)
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.proc = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        state = self.root.parent / "lab-state"
        settings = state / "settings"
        for rel, value in LAB_SETTINGS.items():
            p = settings / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(json.dumps(value))
        env = dict(os.environ)
        env.update(JUPYTER_RUNTIME_DIR=str(state / "runtime"), JUPYTER_CONFIG_DIR=str(state / "config"),
                   PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
        env.pop("CLKIT_OUT_DIR", None)
        env.pop("CLKIT_FIGURES_DIR", None)
        # jupytext pairs .ipynb and .py in the lab as in a user's install
        (state / "config").mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
               f"--port={self.port}", f"--IdentityProvider.token={self.token}",
               f"--ServerApp.root_dir={self.root}", f"--LabApp.user_settings_dir={settings}",
               f"--LabApp.workspaces_dir={state / 'workspaces'}", "--LabApp.expose_app_in_browser=True",
               "--ServerApp.open_browser=False", "--LabApp.check_for_updates_class="
               "jupyterlab.handlers.announcements.NeverCheckForUpdate"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
            cmd.append("--allow-root")
        self._logf = open(self.log, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=env, stdout=self._logf, stderr=subprocess.STDOUT)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"jupyter lab did not answer within 120 s:\n{self.log_tail()}")

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._logf.close()
        return False

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


def prepare_workdir(tmp: Path, notebooks: list[str], smoke: bool = True) -> Path:
    """A user's project folder under ``tmp``: ``notebooks/`` with each committed pair
    (``NN.ipynb`` + ``NN.py``) and, for running, ``NN.smoke.ipynb``: the same notebook
    with its smoke parameters injected after the parameters cell (as ``clkit run
    --params smoke`` does), unpaired so that jupytext leaves it alone.

    Like a clone, the folder is a git repository with the project's ``.gitattributes``
    and ``.gitignore`` in which the pairs are committed (the smoke copies are not), so
    a test can check that running a tracked notebook leaves ``git status`` clean."""
    import nbformat
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    from clkit.run import load_params, notebook_path

    root = tmp / "project"
    nbdir = root / "notebooks"
    nbdir.mkdir(parents=True)
    for nb in notebooks:
        src = notebook_path(nb)
        shutil.copy2(src, nbdir / src.name)
        shutil.copy2(src.with_suffix(".py"), nbdir / f"{nb}.py")
        if smoke:
            doc = load_notebook_node(str(src))
            doc = parameterize_notebook(doc, load_params(nb, "smoke"), report_mode=False)
            doc.metadata.pop("jupytext", None)
            doc.metadata.pop("papermill", None)
            for cell in doc.cells:  # papermill adds empty tags everywhere
                if not cell.metadata.get("tags"):
                    cell.metadata.pop("tags", None)
            nbformat.write(doc, str(nbdir / f"{nb}.smoke.ipynb"))
    if shutil.which("git"):
        for name in (".gitattributes", ".gitignore"):
            shutil.copy2(ROOT / name, root / name)
        tracked = [".gitattributes", ".gitignore"] + [f"notebooks/{nb}{ext}" for nb in notebooks
                                                      for ext in (".ipynb", ".py")]
        git(root, "init", "-q")
        git(root, "add", *tracked)
        git(root, "-c", "user.name=clkit-test", "-c", "user.email=test@example.org", "commit", "-qm", "clone")
    return root


def git(root: Path, *args) -> str:
    """Run git in ``root``; its stdout."""
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


# --- page helpers ---------------------------------------------------------------------------

JS_PANEL = """() => {
  const app = window.jupyterapp;
  const w = app && app.shell.currentWidget;
  return w && w.content && w.content.model ? w : null;
}"""

JS_STATE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  if (!w || !w.content || !w.content.model) return null;
  const cells = [];
  const m = w.content.model;
  for (let i = 0; i < m.cells.length; i++) {
    const c = m.cells.get(i);
    if (c.type !== 'code') continue;
    const outs = [];
    for (let j = 0; j < c.outputs.length; j++) {
      const o = c.outputs.get(j).toJSON();
      outs.push({type: o.output_type, ename: o.ename || null, evalue: o.evalue || null,
                 mimes: Object.keys(o.data || {})});
    }
    cells.push({count: c.executionCount, state: c.executionState || null, outs});
  }
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  return {dirty: w.context.model.dirty, kernel: k ? k.status : null,
          kernelName: k ? k.name : null, cells};
}"""


def open_notebook(page, lab: Lab, rel: str, timeout_s: float = 120):
    """Open ``rel`` (relative to the lab root) in JupyterLab and wait for an idle kernel."""
    page.goto(f"{lab.url}/lab/tree/{rel}?token={lab.token}&reset")
    deadline = time.time() + timeout_s
    last = None
    while time.time() < deadline:
        dialog = page.locator(".jp-Dialog")
        if dialog.count():
            raise AssertionError(f"unexpected dialog on opening {rel}: {dialog.first.inner_text()[:300]}")
        try:
            last = page.evaluate(JS_STATE)
        except Exception:  # noqa: BLE001 - the app is still loading
            last = None
        if last and last["kernel"] == "idle":
            return last
        time.sleep(0.5)
    raise AssertionError(f"{rel}: kernel not idle after {timeout_s:.0f} s (state {last and last['kernel']})\n"
                         f"{lab.log_tail()}")


def run_all(page) -> None:
    """Run → Run All Cells, through the menu bar as a person would."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()


def wait_run_finished(page, timeout_s: float, shot=None, every_s: float = 60) -> dict:
    """Wait until every code cell ran (or one failed); return the final state.

    ``shot(name)`` is called every ``every_s`` seconds for progress screenshots.
    """
    t0 = time.time()
    next_shot = t0 + every_s
    state = None
    while time.time() - t0 < timeout_s:
        state = page.evaluate(JS_STATE)
        cells = state["cells"]
        failed = any(o["type"] == "error" for c in cells for o in c["outs"])
        running = any(c["state"] == "running" for c in cells)
        if state["kernel"] == "idle" and not running and (failed or all(c["count"] for c in cells)):
            # idle between two queued cells happens: confirm once more
            time.sleep(1.0)
            state = page.evaluate(JS_STATE)
            if state["kernel"] == "idle" and (failed or all(c["count"] for c in state["cells"])):
                return state
        if shot and time.time() > next_shot:
            shot(f"running-{int(time.time() - t0)}s")
            next_shot += every_s
        time.sleep(1.0)
    done = sum(1 for c in state["cells"] if c["count"]) if state else 0
    total = len(state["cells"]) if state else "?"
    raise AssertionError(f"Run All did not finish in {timeout_s:.0f} s: {done}/{total} cells ran, "
                         f"kernel {state and state['kernel']}")


def errors(state: dict) -> list[str]:
    return [f"{o['ename']}: {o['evalue']}" for c in state["cells"] for o in c["outs"] if o["type"] == "error"]


def rendered_images(page) -> list[dict]:
    """Images in the notebook's outputs: natural size (0 when the image did not load)."""
    return page.evaluate("""() => Array.from(
        document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output img'))
        .map(i => ({w: i.naturalWidth, h: i.naturalHeight, complete: i.complete}))""")


def output_text(page) -> str:
    return page.evaluate("""() => Array.from(
        document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output'))
        .map(e => e.innerText).join('\\n')""")


def close_all(page) -> None:
    """File → Close All Tabs; fails when JupyterLab asks to save (an untouched notebook must not)."""
    page.evaluate("() => window.jupyterapp.commands.execute('application:close-all')")
    time.sleep(1.5)
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        text = dialog.first.inner_text()
        raise AssertionError(f"closing asked: {text[:300]}")


def shutdown_kernels(page) -> None:
    page.evaluate("() => window.jupyterapp.serviceManager.sessions.shutdownAll()")
    time.sleep(1.0)


def launch_browser(playwright):
    return playwright.chromium.launch(
        executable_path=find_chromium(), headless=True,
        args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])


def screenshot(page, name: str, folder: Path = SCREENSHOTS) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    try:
        page.screenshot(path=str(path), full_page=False)
    except Exception:  # noqa: BLE001 - a screenshot is a diagnostic, never the failure
        pass
    return path
