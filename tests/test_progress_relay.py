"""Progress inside long cells: a headless run relays the cells' own bars and a heartbeat (issue 55)."""

import io
import json

import nbformat

from clkit.run_progress import CellProgress, bar_state, progress_engine


def _notebook(path, cells):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Demo\n\n## 1. Training")] + \
        [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, str(path))
    return nb


def _run(tmp_path, cells, **kw):
    import papermill as pm
    from papermill.engines import papermill_engines

    src = tmp_path / "demo.ipynb"
    nb = _notebook(src, cells)
    log = io.StringIO()
    progress = CellProgress("demo", nb.cells, stream=log, live=False, **kw)
    papermill_engines.register("clkit-progress-test", progress_engine(progress))
    with progress:
        pm.execute_notebook(str(src), str(tmp_path / "out.ipynb"), kernel_name="python3", progress_bar=False,
                            engine_name="clkit-progress-test", cwd=str(tmp_path))
    return log.getvalue().splitlines(), nbformat.read(str(tmp_path / "out.ipynb"), as_version=4)


def test_bar_state_reads_text_and_widget_bars():
    assert bar_state({"msg_type": "stream", "content": {"name": "stderr",
                      "text": "x:  20%|##        | 2/10 [00:02<00:08,  1.00it/s]\r"
                              "x:  30%|###       | 3/10 [00:03<00:07,  1.00it/s]"}}) \
        == "x: 30% 3/10 [00:03<00:07, 1.00it/s]"
    # a bar without a total: count, elapsed and rate
    assert bar_state({"msg_type": "stream", "content": {"name": "stderr", "text": "\r7it [00:03,  2.33it/s]"}}) \
        == "7it [00:03, 2.33it/s]"
    w = {}
    assert bar_state({"msg_type": "comm_msg", "content": {"data": {"state": {"value": "fit:\u2007 10%"}}}}, w) is None
    assert bar_state({"msg_type": "comm_msg", "content": {"data": {"state": {"value": 3}}}}, w) is None
    assert bar_state({"msg_type": "comm_msg", "content": {"data": {"state": {
        "value": "\u20071/10\u2007[00:01&lt;00:09,\u2007\u20071.00it/s]"}}}}, w) == "fit: 10% 1/10 [00:01<00:09, 1.00it/s]"
    assert bar_state({"msg_type": "execute_result", "content": {}}) is None


def test_a_long_cell_relays_its_bar_and_a_silent_cell_gets_a_heartbeat(tmp_path):
    lines, executed = _run(tmp_path, [
        "import time\nfrom clkit.progress import tqdm",
        # a widget bar (clkit.progress in a kernel) advancing every 0.6 s, one step from a worker thread
        "import threading\nbar = tqdm(total=8, desc='training')\n"
        "for i in range(8):\n    time.sleep(0.6)\n"
        "    t = threading.Thread(target=bar.update) if i == 3 else None\n"
        "    (t.start(), t.join()) if t else bar.update()\nbar.close()",
        # a text bar on stderr (a user's own tqdm)
        ("from tqdm.std import tqdm as text_tqdm\nfor _ in text_tqdm(range(5), desc='plain', mininterval=0):\n"
         "    time.sleep(0.5)"),
        # one step of 3.5 s: the bar is redrawn anyway (clkit.progress.REFRESH_S), its elapsed time moving
        "stuck = tqdm(total=2, desc='stuck')\nstuck.update()\ntime.sleep(3.5)\nstuck.update()\nstuck.close()",
        "time.sleep(3.5)",   # nothing shown
    ], relay_s=1.0, heartbeat_s=1.5)
    text = "\n".join(lines)
    relayed = [ln for ln in lines if "| training:" in ln]
    assert len(relayed) >= 2, text
    assert any("/8 [" in ln and "it/s" in ln for ln in relayed), text   # count, rate and ETA
    assert len(relayed) <= 8 * 0.6 / 1.0 + 2, text                    # at most one line per relay_s
    assert any("| plain:" in ln and "/5 [" in ln for ln in lines), text
    stuck = {ln.split("| stuck:")[1].split("<")[0] for ln in lines if "| stuck: 50% 1/2 [" in ln}
    assert len(stuck) >= 2, text                                        # e.g. "[00:01" then "[00:02"
    assert any("still in cell 5/5" in ln for ln in lines), text       # the silent cell's heartbeat
    # the saved notebook keeps the finished bar as text, not a widget
    outs = executed.cells[2].outputs
    assert any("training: 100%" in json.dumps(o) for o in outs), outs


def test_live_line_ends_with_the_bar():
    from types import SimpleNamespace as C

    p = CellProgress("nb", [C(cell_type="code", source="x")], stream=io.StringIO(), live=True)
    p.cell_start(0)
    p.message({"msg_type": "stream", "content": {"name": "stderr", "text": "\r3it [00:01,  3.00it/s]"}})
    assert p.line().endswith("| 3it [00:01, 3.00it/s]")
    p.cell_start(0)   # a new cell forgets the old bar
    assert "it/s" not in p.line()


def test_heartbeats_without_a_kernel():
    """The heartbeat needs no kernel: a slow kernel start and a silent cell are said, at most every heartbeat_s."""
    import time
    from types import SimpleNamespace as C

    log = io.StringIO()
    cells = [C(cell_type="code", source="x"), C(cell_type="code", source="y")]
    with CellProgress("nb", cells, stream=log, live=False, relay_s=0.1, heartbeat_s=0.3) as p:
        time.sleep(0.5)
        p.cell_start(0)
        p.cell_complete(0)
        p.cell_start(1)
        time.sleep(0.5)
        p.message({"msg_type": "stream", "content": {"name": "stderr", "text": "\r2it [00:01,  2.00it/s]"}})
        time.sleep(0.3)
    lines = log.getvalue().splitlines()
    assert any("nb  starting the kernel, 0:00" in ln for ln in lines), lines
    assert any("nb  still in cell 2/2, 0:00" in ln for ln in lines), lines
    assert any(ln.endswith("| 2it [00:01, 2.00it/s]") for ln in lines), lines
    assert len(lines) <= 8, lines
