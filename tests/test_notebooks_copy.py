"""``clkit notebooks copy DIR``: editable copies that run, nothing overwritten without --force (issue 42/43)."""

import filecmp

from clkit.cli import main
from clkit.notebooks import list_notebooks, notebooks_dir


def test_copies_every_notebook_with_its_params_and_grids(tmp_path, capsys):
    dest = tmp_path / "mine"
    assert main(["notebooks", "copy", str(dest)]) == 0
    src = notebooks_dir()
    for stem in list_notebooks():
        assert filecmp.cmp(src / f"{stem}.ipynb", dest / f"{stem}.ipynb", shallow=False)
        assert (dest / "params" / stem / "smoke.yaml").exists()
    assert "CLKIT_NOTEBOOKS=" in capsys.readouterr().out


def test_refuses_to_overwrite_without_force(tmp_path, capsys):
    dest = tmp_path / "mine"
    assert main(["notebooks", "copy", str(dest)]) == 0
    (dest / "03_temporal_metrics.ipynb").write_text("my edits")
    assert main(["notebooks", "copy", str(dest)]) == 2
    assert "already holds" in capsys.readouterr().err
    assert (dest / "03_temporal_metrics.ipynb").read_text() == "my edits"
    assert main(["notebooks", "copy", str(dest), "--force"]) == 0
    assert (dest / "03_temporal_metrics.ipynb").read_text() != "my edits"


def test_the_copies_are_what_clkit_run_lists_with_clkit_notebooks(tmp_path, monkeypatch):
    dest = tmp_path / "mine"
    assert main(["notebooks", "copy", str(dest)]) == 0
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(dest))
    assert notebooks_dir() == dest and list_notebooks() == sorted(p.stem for p in dest.glob("0*.ipynb"))
