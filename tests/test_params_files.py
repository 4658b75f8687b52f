"""``--params FILE``: a binary file is named, an empty one runs the defaults out loud (issue 43)."""

import pytest

from clkit.notebooks import load_params


def test_a_binary_params_file_is_named(tmp_path):
    f = tmp_path / "model.bin"
    f.write_bytes(b"seed: 1\n\xff\xfe")
    with pytest.raises(ValueError, match=r"params file .*model\.bin is not a text \(UTF-8\) YAML file: byte 8 is 0xff"):
        load_params("03_temporal_metrics", str(f))


def test_an_empty_params_file_warns_and_gives_the_notebooks_defaults(tmp_path):
    f = tmp_path / "empty.yaml"
    f.write_text("# only a comment\n")
    with pytest.warns(UserWarning, match="sets no parameter: the run uses 03_temporal_metrics's own defaults"):
        values = load_params("03_temporal_metrics", str(f))
    assert values == {}   # papermill injects nothing: the parameters cell's own values run


def test_the_cli_prints_clkits_warnings_as_one_note(tmp_path, capsys, monkeypatch):
    """The warning reaches the terminal as ``[clkit] note: ...``, not as a Python warning with a path."""
    import clkit.run as run_mod
    from clkit.cli import main

    f = tmp_path / "empty.yaml"
    f.write_text("")
    monkeypatch.setattr(run_mod, "execute", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt()))
    code = main(["run", "03", "--params", str(f), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "[clkit] note: params file" in err and "UserWarning" not in err and code == 130
