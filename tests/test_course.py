"""The course (issue 18): the five nbgrader assignments and ``clkit course build / grade``.

One module fixture builds the course and grades, in one Dask batch, four students:

- ``alice`` submits the instructor's versions (solutions included): full marks;
- ``bob`` submits one planted wrong solution per assignment (e.g. SH without the
  first-crossing rule, S(O) without the K/((K-1)N) factor): he loses exactly the
  points of the tests that target it;
- ``dave`` submits the released student versions untouched: zero on every
  autograded test (every solution region really is removed);
- ``carol`` submits a temporal notebook with a syntax error: reported with its
  error and graded zero, the others unaffected.

A second run grades nothing twice.
"""

import csv
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from clkit.course import ASSIGNMENTS, SubmissionError, build_course, find_submissions, grade_submissions
from clkit.course.build import course_source_dir
from clkit.course.grade import _key, check_submission, write_tables
from clkit.cli import main

# (solution cell, text in the instructor's solution, planted replacement, tests that must fail)
PLANTED = {
    "taskification": ("stability", "np.triu_indices(K, k=l_min)", "np.triu_indices(K, k=1)",
                      {"test_stability"}),
    "edge": ("score", "k / ((k - 1) * n) * total", "total",  # S(O) without the K/((K-1)N) factor
             {"test_score_example", "test_score_random"}),
    "temporal": ("sh",  # SH read literally: a recovery after the first crossing counts
                 "        h = 0\n        while t + h + 1 < T and g[t, t + h + 1] >= delta:\n"
                 "            h += 1\n        sh[t] = h",
                 "        ok = [h for h in range(T - t) if g[t, t + h] >= delta]\n"
                 "        sh[t] = max(ok) if ok else 0",
                 {"test_sh_example", "test_sh_random"}),
    "curriculum": ("acc", "(T * (T + 1) / 2)", "(T * (T - 1) / 2)", {"test_acc"}),  # the printed normaliser
    "drift": ("overlap", "w.max(axis=1) < tau", "w.max(axis=1) <= tau", {"test_overlap"}),
}


def _source(name):
    return course_source_dir() / name / f"{name}.ipynb"


def _edit(nb_path, dest, cell_id, old, new):
    nb = nbformat.read(str(nb_path), as_version=4)
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == cell_id]
    assert len(cells) == 1 and old in cells[0].source, (nb_path, cell_id)
    cells[0].source = cells[0].source.replace(old, new)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    course = build_course(root / "course", log=lambda line: None)
    subs = root / "submitted"
    for name in ASSIGNMENTS:
        nb = f"{name}.ipynb"
        for student in ("alice", "dave"):
            (subs / student / name).mkdir(parents=True)
        shutil.copy(_source(name), subs / "alice" / name / nb)
        shutil.copy(course / "release" / name / nb, subs / "dave" / name / nb)
        cell, old, new, _ = PLANTED[name]
        _edit(_source(name), subs / "bob" / name / nb, cell, old, new)
    _edit(_source("temporal"), subs / "carol" / "temporal" / "temporal.ipynb", "dh",
          "def drift_horizon(A, epsilon, lam):", "def drift_horizon(A, epsilon, lam)")
    lines = []
    first = grade_submissions(subs, course=course, workers=2, log=lines.append)
    second = grade_submissions(subs, course=course, workers=2, log=lines.append)
    out = Path(first["out"])
    grades = {(r["student"], r["assignment"]): r for r in csv.DictReader(open(out / "grades.csv"))}
    return {"root": root, "course": course, "subs": subs, "out": out, "first": first, "second": second,
            "lines": lines, "grades": grades}


def _rec(course, student, name):
    return json.loads((course["out"] / student / name / "grade.json").read_text())


# --- build -----------------------------------------------------------------------------------

def test_build_writes_an_nbgrader_course(course):
    c = course["course"]
    assert (c / "gradebook.db").exists() and "course_id" in (c / "nbgrader_config.py").read_text()
    for name in ASSIGNMENTS:
        assert (c / "release" / name / f"{name}.ipynb").exists()
        assert (c / "source" / name / f"{name}.ipynb").exists()
    assert set(json.loads((c / "course.json").read_text())["assignments"]) == set(ASSIGNMENTS)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_hides_solutions_tests_and_rubric(course, name):
    text = (course["course"] / "release" / name / f"{name}.ipynb").read_text()
    for secret in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "Model answer", "Rubric", "_ref("):
        assert secret not in text, (name, secret)
    nb = nbformat.read(str(course["course"] / "release" / name / f"{name}.ipynb"), as_version=4)
    stubs = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
    assert len(stubs) >= 3 and all("raise NotImplementedError()" in c.source for c in stubs)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_sources_have_no_outputs_and_an_open_question(name):
    nb = nbformat.read(str(_source(name)), as_version=4)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
    meta = [c.metadata.get("nbgrader", {}) for c in nb.cells]
    tests = [m for m in meta if m.get("grade") and not m.get("solution")]
    manual = [m for m in meta if m.get("grade") and m.get("solution")]
    assert 3 <= len([m for m in meta if m.get("solution") and not m.get("grade")]) <= 5
    assert len(manual) == 1 and manual[0]["points"] > 0 and len(tests) >= 4


# --- grading ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_instructor_version_scores_full_marks(course, name):
    rec = _rec(course, "alice", name)
    assert rec["status"] == "graded" and rec["auto_max"] > 0
    assert rec["auto_score"] == rec["auto_max"], [k for k, t in rec["tests"].items() if t["score"] < t["max"]]
    assert not [e for e in rec["cell_errors"] if e.startswith("test_")]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_student_version_scores_zero(course, name):
    rec = _rec(course, "dave", name)
    assert rec["status"] == "graded" and rec["auto_score"] == 0
    assert all(t["score"] == 0 for t in rec["tests"].values())


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_planted_wrong_solution_loses_exactly_its_tests(course, name):
    rec = _rec(course, "bob", name)
    lost = {k for k, t in rec["tests"].items() if t["score"] < t["max"]}
    assert lost == PLANTED[name][3]
    assert rec["auto_score"] == rec["auto_max"] - sum(rec["tests"][k]["max"] for k in lost)


def test_syntax_error_reported_and_graded_zero(course):
    rec = _rec(course, "carol", "temporal")
    assert rec["status"] == "error" and rec["auto_score"] == 0
    assert "'carol'" in rec["error"] and "temporal.ipynb" in rec["error"] and "SyntaxError" in rec["error"]
    assert "(dh)" in rec["error"]
    assert {"student": "carol", "assignment": "temporal", "error": rec["error"]} in course["first"]["errors"]
    assert any("carol/temporal: graded 0" in line for line in course["lines"])
    assert course["grades"][("carol", "temporal")]["status"] == "error"


def test_grades_table_and_rerun_grades_nothing(course):
    first, second = course["first"], course["second"]
    assert first["total"] == 16 and first["graded"] == 16 and first["skipped"] == 0 and not first["failed"]
    assert second["graded"] == 0 and second["skipped"] == 16
    g = course["grades"]
    assert len(g) == 16
    alice = g[("alice", "temporal")]
    assert alice["auto_score"] == alice["auto_max"] and alice["manual_max"] == "3" and alice["manual_score"] == ""
    assert g[("bob", "drift")]["failed_tests"] == "test_overlap"


def test_feedback_and_autograded_notebooks(course):
    for student in ("alice", "bob", "dave"):
        d = course["out"] / student / "edge"
        assert (d / "feedback.html").exists() and (d / "edge.ipynb").exists()
    broken = (course["out"] / "carol" / "temporal" / "feedback.html").read_text()
    assert "SyntaxError" in broken and "Score: 0 / 12" in broken
    html = (course["out"] / "bob" / "drift" / "feedback.html").read_text()
    assert "test_overlap" in html and "Score:" in html


def test_unreachable_scheduler_named(course, tmp_path):
    with pytest.raises(ConnectionError, match="tcp://127.0.0.1:9"):
        grade_submissions(course["subs"], course=course["course"], out=tmp_path / "g",
                          scheduler="tcp://127.0.0.1:9", log=lambda line: None)


def test_manual_grades_are_kept_and_added(course, tmp_path):
    out = tmp_path / "graded"
    shutil.copytree(course["out"], out)
    path = out / "manual_grades.csv"
    rows = list(csv.DictReader(open(path)))
    assert {(r["student"], r["cell"], r["max_points"]) for r in rows if r["assignment"] == "edge"} == {
        (s, "open_question", "3") for s in ("alice", "bob", "dave")}
    for r in rows:
        if (r["student"], r["assignment"]) == ("alice", "edge"):
            r["points"], r["comment"] = "2.5", "good"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    write_tables(out)
    g = {(r["student"], r["assignment"]): r for r in csv.DictReader(open(out / "grades.csv"))}
    assert g[("alice", "edge")]["manual_score"] == "2.5"
    assert float(g[("alice", "edge")]["total"]) == float(g[("alice", "edge")]["auto_max"]) + 2.5
    kept = [r for r in csv.DictReader(open(path)) if (r["student"], r["assignment"]) == ("alice", "edge")]
    assert kept[0]["points"] == "2.5" and kept[0]["comment"] == "good"
    text = path.read_text().replace("2.5,good", "7,good")
    path.write_text(text)
    with pytest.raises(ValueError, match=r"student 'alice', assignment 'edge', cell 'open_question'.*\[0, 3\]"):
        write_tables(out)


def test_changed_submission_gets_a_new_key(course, tmp_path):
    subs = find_submissions(course["subs"])
    s = next(x for x in subs if (x["student"], x["assignment"]) == ("alice", "edge"))
    k1 = _key(s, "h")
    copy = tmp_path / "edge.ipynb"
    copy.write_text(Path(s["path"]).read_text() + "\n")
    assert _key({**s, "path": str(copy)}, "h") != k1 and _key(s, "h2") != k1


# --- bad input -------------------------------------------------------------------------------

def test_unknown_assignment_named(tmp_path, capsys):
    with pytest.raises(ValueError, match="unknown assignment 'edges'; assignments are"):
        build_course(tmp_path / "c", ["edges"])
    assert main(["course", "build", "--out", str(tmp_path / "c"), "--assignment", "edges"]) == 2
    assert "unknown assignment 'edges'" in capsys.readouterr().err
    (tmp_path / "subs" / "erin" / "edges").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"student 'erin': unknown assignment 'edges'"):
        find_submissions(tmp_path / "subs")


def test_wrong_layout_named(tmp_path, capsys):
    subs = tmp_path / "subs"
    (subs / "erin").mkdir(parents=True)
    (subs / "erin" / "edge.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"student 'erin': .*edge.ipynb is not inside an assignment folder"):
        find_submissions(subs)
    assert main(["course", "grade", str(subs), "--course", str(tmp_path / "c")]) == 2
    assert "not inside an assignment folder" in capsys.readouterr().err
    (subs / "erin" / "edge.ipynb").unlink()
    (subs / "erin" / "edge").mkdir()
    (subs / "erin" / "edge" / "mine.ipynb").write_text("{}")
    with pytest.raises(ValueError, match=r"student 'erin', assignment 'edge': .*edge.ipynb not found"):
        find_submissions(subs)
    shutil.rmtree(subs / "erin")
    (subs / "edge.ipynb").write_text("{}")
    with pytest.raises(ValueError, match="directly in the submissions folder"):
        find_submissions(subs)
    with pytest.raises(ValueError, match="does not exist"):
        find_submissions(tmp_path / "nowhere")


def test_missing_required_cell_named(course, tmp_path):
    release = course["course"] / "release" / "drift" / "drift.ipynb"
    nb = nbformat.read(str(release), as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_overlap"]
    bad = tmp_path / "drift.ipynb"
    nbformat.write(nb, str(bad))
    with pytest.raises(SubmissionError, match=r"student 'frank', file .*drift.ipynb: missing required cell\(s\) "
                                              r"\['test_overlap'\]"):
        check_submission(bad, release, "frank")
    bad.write_text("not json")
    with pytest.raises(SubmissionError, match=r"student 'frank', file .*drift.ipynb: not a readable notebook"):
        check_submission(bad, release, "frank")
    check_submission(release, release, "frank")  # the release itself is fine
