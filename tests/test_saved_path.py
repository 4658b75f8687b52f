"""A notebook cell ending with ``record.figure(...)`` or ``record.save()`` shows ``saved NAME``, not a
machine path inside the run's staging folder (issue 43: "No PosixPath outputs")."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from IPython.lib.pretty import pretty  # noqa: E402

from clkit.results import RunRecord  # noqa: E402


def test_saved_files_display_their_name_only(tmp_path, monkeypatch):
    monkeypatch.setenv("CLKIT_OUT_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("CLKIT_FIGURES_DIR", str(tmp_path / "figs"))
    rec = RunRecord("demo", params={"seed": 0})
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    shown = rec.figure(fig, "curve")
    plt.close(fig)
    saved = rec.save(tmp_path / "results.json")
    assert pretty(shown) == "saved curve.png" and shown.exists()
    assert pretty(saved) == "saved results.json" and saved.read_text().startswith("{")
    assert str(tmp_path) not in pretty(shown) + pretty(saved)
