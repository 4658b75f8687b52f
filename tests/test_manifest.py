"""Every run says what ran it; clkit --version, clkit cite and CITATION.cff agree (issue 42)."""

import json
import re
from pathlib import Path

import pytest
import yaml

from clkit import manifest as mf
from clkit.citation import PAPERS, bibtex, paper
from clkit.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    from tiny_notebook import write_tiny_notebook

    write_tiny_notebook(tmp_path / "nb", {"plain": {"seed": 1}})
    monkeypatch.setenv("CLKIT_NOTEBOOKS", str(tmp_path / "nb"))
    return tmp_path


def test_run_json_and_results_json_carry_the_same_manifest(tiny):
    out = tiny / "runs"
    assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 0
    res = json.loads((out / "00_tiny" / "results.json").read_text())
    run = json.loads((out / "00_tiny" / "run.json").read_text())
    m = res["manifest"]
    assert run["manifest"] == m
    assert m["clkit"] == mf.version() and m["python"] and m["machine"]["cores"] >= 1
    assert {"numpy", "torch", "scipy"} <= set(m["libraries"])
    git = mf.git_state()
    assert m["git"] == git and (git is None or re.fullmatch(r"[0-9a-f]{40}", git["commit"]))
    if git is not None:   # the commit is the checkout's HEAD, as git itself says (a clone in CI)
        import subprocess

        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert head.returncode != 0 or git["commit"] == head.stdout.strip()
    assert res["paper"] is None                           # not one of clkit's five notebooks
    assert m["seeds"] == {"seed": 1}                      # the run's seed parameters
    first = (out / "00_tiny" / "results.json").read_bytes()
    assert main(["run", "00", "--params", "plain", "--out", str(out), "--no-progress"]) == 0
    assert (out / "00_tiny" / "results.json").read_bytes() == first   # nothing timed or random in it


def test_version_flag(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"clkit {mf.version()}")


def test_cite_prints_balanced_bibtex_for_every_notebook(capsys):
    assert main(["cite", "all"]) == 0
    out = capsys.readouterr().out
    for name, rec in PAPERS.items():
        entry = bibtex(name)
        assert entry in out and entry.count("{") == entry.count("}")
        assert f"title = {{{rec['title']}}}" in entry
        assert paper(name)["bibtex"] == entry
    assert main(["cite", "9"]) == 2


def test_citation_cff_lists_the_five_papers_as_the_kit_cites_them():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    # the version cited is the code's (clkit.__version__; a release commit sets both)
    assert cff["cff-version"] == "1.2.0" and cff["version"] == mf.version()
    assert [r["title"] for r in cff["references"]] == [p["title"] for p in PAPERS.values()]
    assert [str(r["year"]) for r in cff["references"]] == [p["year"] for p in PAPERS.values()]


def test_citation_cff_validates_against_the_cff_1_2_0_schema():
    """CITATION.cff is valid Citation File Format 1.2.0, checked as ``cffconvert --validate`` checks it.

    cffconvert's own check is ``jsonschema.validate`` of the parsed file against the CFF 1.2.0 JSON
    schema with a format checker; ``tests/data/cff-1.2.0-schema.json`` is that schema, copied from
    cffconvert 2.0.0 (citation-file-format.github.io/1.2.0/schema.json, CC-BY-4.0). cffconvert itself
    is not a test dependency: every release pins ``jsonschema<4``, which jupyterlab-server and
    jupyter-events (``jsonschema>=4.18``) exclude, so ``clkit[test]`` could not be installed with it.
    """
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests" / "data" / "cff-1.2.0-schema.json").read_text())
    assert schema["$id"] == "https://citation-file-format.github.io/1.2.0/schema.json"
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    jsonschema.validate(instance=cff, schema=schema, format_checker=jsonschema.FormatChecker())
    assert len(cff["references"]) == len(PAPERS) == 5
    assert [r["notes"].split()[1].rstrip(";") for r in cff["references"]] == list(PAPERS)
    broken = {**cff, "references": [{**cff["references"][0], "type": "blog-entry"}]}   # not a CFF type
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(instance=broken, schema=schema, format_checker=jsonschema.FormatChecker())


def test_summary_notes_runs_from_different_environments(tmp_path, capsys):
    for name, torch in (("a", "2.14.1"), ("b", "2.11.0")):
        (tmp_path / name).mkdir()
        rec = {"notebook": "x", "manifest": {"clkit": "0.1.0", "libraries": {"torch": torch}},
               "params": {}, "results": {"acc": 0.5}}
        (tmp_path / name / "results.json").write_text(json.dumps(rec))
    assert main(["summary", str(tmp_path)]) == 0
    assert "[clkit] note: the runs under" in capsys.readouterr().err


def test_differences_is_empty_for_one_environment():
    m = mf.manifest(gpu=False)
    assert mf.differences({"a": m, "b": json.loads(json.dumps(m))}) == []


def test_results_json_manifest_records_the_seeds(tmp_path):
    """The seeds of a fabricated record: ``seed`` / ``*_seed`` integers, ``seeds`` / ``*_seeds`` lists."""
    import numpy as np

    from clkit.results import RunRecord

    rec = RunRecord("demo", params={"seed": np.int64(3), "seeds": [0, 42], "cl_seeds": 7, "data_seed": 5,
                                    "verdict_seeds": 8, "num_null": 5, "lr": 0.1})
    saved = json.loads(rec.save(tmp_path / "results.json").read_text())
    assert saved["manifest"]["seeds"] == {"seed": 3, "seeds": [0, 42], "data_seed": 5}
    assert mf.seeds({"seeds": 6, "seed": None, "seeds_note": "x"}) == {}


def test_the_seed_rule_fits_the_five_notebooks():
    """A plural integer (01's cl_seeds, 03's verdict_seeds, 04's seeds) is a count, not a seed."""
    from clkit.notebooks import notebook_parameters

    expected = {"01_taskification": {"seed": 0}, "02_edge": {"seeds": [0, 42, 1993], "seed": 0},
                "03_temporal_metrics": {"seed": 0}, "04_curriculum": {"seed": 0},
                "05_drift": {"seeds": [1, 2, 3, 4, 5, 6, 7]}}
    for nb, want in expected.items():
        defaults = {k: v["default"] for k, v in notebook_parameters(nb).items()}
        assert mf.seeds(defaults) == want, nb
