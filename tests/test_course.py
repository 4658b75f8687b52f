"""The course (issues 18, 28): the five nbgrader assignments and ``clkit course build / grade``.

One module fixture builds the course and grades, in one Dask batch, four students, each
working from the released notebook as a student does (hidden tests removed):

- ``alice`` fills in the instructor's solutions: full marks (hidden tests pass);
- ``bob`` fills them in with one planted wrong solution per assignment (e.g. SH without
  the first-crossing rule, S(O) without the K/((K-1)N) factor): he loses exactly the
  points of the tests that target it, hidden ones included;
- ``dave`` submits the released student versions untouched: zero on every autograded
  test (every solution region really is removed);
- ``carol`` submits a temporal notebook with a syntax error in exercise 1: graded cell by
  cell exactly as nbgrader's own ``autograde`` grades it, with the error noted.

The grades reach the course's nbgrader gradebook (``nbgrader export``, ``Gradebook``), no
hidden-test cell makes nbgrader warn "checksum has changed", a second run grades nothing
twice, and grading interrupted by Ctrl-C keeps what was graded and resumes.
"""

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
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


def _solved(release, dest, cell_id=None, old=None, new=None):
    """The released notebook with the instructor's solutions typed in (as a student would),
    the one in ``cell_id`` changed from ``old`` to ``new``."""
    nb = nbformat.read(str(release), as_version=4)
    name = Path(release).stem
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(str(_source(name)), 4).cells
               if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"}
    edited = 0
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]  # the solution markers are comments
            if gid == cell_id:
                assert old in c.source, (name, cell_id)
                c.source, edited = c.source.replace(old, new), 1
    assert edited == (cell_id is not None)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))
    return dest


SYNTAX_ERROR = ("ratio", "def transfer_ratio(A):", "def transfer_ratio(A)")  # exercise 1 of temporal


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("course")
    course = build_course(root / "course", log=lambda line: None)
    subs = root / "submitted"
    for name in ASSIGNMENTS:
        nb = f"{name}.ipynb"
        release = course / "release" / name / nb
        (subs / "dave" / name).mkdir(parents=True)
        shutil.copy(release, subs / "dave" / name / nb)
        _solved(release, subs / "alice" / name / nb)
        cell, old, new, _ = PLANTED[name]
        _solved(release, subs / "bob" / name / nb, cell, old, new)
    _solved(course / "release" / "temporal" / "temporal.ipynb", subs / "carol" / "temporal" / "temporal.ipynb",
            *SYNTAX_ERROR)
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


def _nbgrader_autograde_copy(course, tmp_path, student, assignment):
    """nbgrader's own ``autograde`` on a copy of the course (as built, no clkit grading): per-cell scores."""
    import subprocess
    import sys

    from nbgrader.api import Gradebook

    copy = tmp_path / "course"
    copy.mkdir()
    for f in ("nbgrader_config.py", "gradebook.db"):
        shutil.copy2(course["course"] / f, copy / f)
    for d in ("source", "release"):
        shutil.copytree(course["course"] / d / assignment, copy / d / assignment)
    shutil.copytree(course["subs"] / student / assignment, copy / "submitted" / student / assignment)
    nbgrader = Path(sys.executable).parent / "nbgrader"
    res = subprocess.run([str(nbgrader), "autograde", assignment, "--student", student], cwd=copy,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    with Gradebook(f"sqlite:///{copy / 'gradebook.db'}") as gb:
        sub = gb.find_submission(assignment, student)
        return {g.name: g.auto_score for g in sub.notebooks[0].grades}, res.stderr


def test_syntax_error_graded_cell_by_cell_as_nbgrader_does(course, tmp_path):
    """Issue 28: a syntax error in exercise 1 gave 0/9 here but 3/9 in nbgrader's own autograde."""
    rec = _rec(course, "carol", "temporal")
    assert rec["status"] == "graded" and rec["error"] is None
    theirs, _ = _nbgrader_autograde_copy(course, tmp_path, "carol", "temporal")
    ours = {k: t["score"] for k, t in rec["tests"].items()}
    assert ours == {k: v for k, v in theirs.items() if k in ours}
    assert rec["auto_score"] == sum(ours.values()) == 3 and rec["auto_max"] == 9
    assert any(n.startswith("SyntaxError in cell") and "(ratio)" in n for n in rec["notes"])
    assert any("carol/temporal: note: SyntaxError" in line for line in course["lines"])
    assert "SyntaxError" in course["grades"][("carol", "temporal")]["notes"]


def test_no_checksum_warnings_and_hidden_tests_run(course):
    """Every student works from the release (hidden tests removed): nbgrader checks the restored
    cells against its own checksums without a warning, and the hidden tests run (bob loses
    hidden ones)."""
    for student in ("alice", "bob", "dave"):
        for name in ASSIGNMENTS:
            rec = _rec(course, student, name)
            assert not [w for w in rec["nbgrader_warnings"] if "has changed" in w], (student, name)
            assert not rec["notes"], (student, name, rec["notes"])
    hidden = {"test_stability", "test_score_random", "test_sh_random", "test_acc", "test_overlap"}
    lost = {k for name in ASSIGNMENTS for k, t in _rec(course, "bob", name)["tests"].items() if t["score"] < t["max"]}
    assert hidden <= lost


def test_grades_reach_the_nbgrader_gradebook(course, tmp_path):
    """Issue 28: after clkit course grade, nbgrader export and Gradebook see every submission,
    and formgrader's folders hold the notebooks."""
    import subprocess
    import sys

    from nbgrader.api import Gradebook

    c = course["course"]
    copy = tmp_path / "course"  # nbgrader export writes grades.csv into the course folder
    shutil.copytree(c, copy)
    nbgrader = Path(sys.executable).parent / "nbgrader"
    res = subprocess.run([str(nbgrader), "export", "--to", str(tmp_path / "export.csv")], cwd=copy,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    exported = {(r["student_id"], r["assignment"]): r for r in csv.DictReader(open(tmp_path / "export.csv"))}
    assert set(course["grades"]) <= set(exported)  # nbgrader lists every student x assignment
    assert all(float(r["score"]) == 0 for k, r in exported.items() if k not in course["grades"])
    for k, g in course["grades"].items():
        assert float(exported[k]["score"]) == float(g["total"]) and float(exported[k]["max_score"]) == float(
            g["max_score"]), k
    with Gradebook(f"sqlite:///{c / 'gradebook.db'}") as gb:
        assert sorted(s.id for s in gb.students) == ["alice", "bob", "carol", "dave"]
        sub = gb.find_submission("temporal", "carol")
        assert sub.score == 3 and sub.max_score == 12
        grades = {g.name: g for g in sub.notebooks[0].grades}
        assert grades["test_dh_random"].auto_score == 2 and grades["test_g_random"].auto_score == 0
        # the open question left as released: nbgrader scores an untouched answer zero, "No response."
        assert grades["open_question"].auto_score == 0 and not grades["open_question"].needs_manual_grade
        assert {c.name: c.auto_comment for c in sub.notebooks[0].comments}["open_question"] == "No response."
    for student, name in course["grades"]:
        assert (c / "autograded" / student / name / f"{name}.ipynb").exists()
        assert (c / "submitted" / student / name / f"{name}.ipynb").exists()


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
    assert "SyntaxError" in broken and re.search(r"Score: 3(\.0)? / 12", broken)
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


def test_submission_checks_note_what_nbgrader_will_do(course, tmp_path):
    release = course["course"] / "release" / "drift" / "drift.ipynb"
    nb = nbformat.read(str(release), as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "test_overlap"]
    locked = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_centers")
    locked.source += "\nassert True  # the student's own line"
    bad = tmp_path / "drift.ipynb"
    nbformat.write(nb, str(bad))
    notes = check_submission(bad, release, "frank")
    assert notes[0].startswith("missing cell(s) ['test_overlap']")
    assert any(n.startswith("locked cell") and "(test_centers) was changed" in n for n in notes)
    bad.write_text("not json")
    with pytest.raises(SubmissionError, match=r"student 'frank', file .*drift.ipynb: not a readable notebook"):
        check_submission(bad, release, "frank")
    assert check_submission(release, release, "frank") == []  # the release itself is fine


def test_grading_interrupted_keeps_what_was_graded_and_resumes(course, tmp_path):
    """Issue 28: Ctrl-C (SIGINT to the command's process group, as a terminal sends it) during
    ``clkit course grade``: exit 130, every finished submission kept in the results and the
    gradebook; the rerun grades only the rest."""
    from nbgrader.api import Gradebook

    c = tmp_path / "course"
    shutil.copytree(course["course"], c, ignore=shutil.ignore_patterns("autograded", "submitted"))
    with Gradebook(f"sqlite:///{c / 'gradebook.db'}") as gb:  # a course nobody has graded yet
        for st in list(gb.students):
            gb.remove_student(st.id)
    subs, out = tmp_path / "subs", tmp_path / "graded"
    students = ["s1", "s2", "s3", "s4"]
    for st in students:
        shutil.copytree(course["subs"] / "alice" / "drift", subs / st / "drift")
    clkit = Path(sys.executable).parent / "clkit"
    proc = subprocess.Popen([str(clkit), "course", "grade", str(subs), "--course", str(c), "--out", str(out),
                             "--workers", "1"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            # its own process group, with Ctrl-C's default action (a test run started in
                            # the background inherits SIGINT ignored, and Python would keep ignoring it)
                            preexec_fn=lambda: (os.setsid(), signal.signal(signal.SIGINT, signal.SIG_DFL)))
    deadline = time.monotonic() + 240
    while not list(out.glob("*/drift/grade.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert proc.poll() is None, "grading finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    log, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130, log[-3000:]
    assert "interrupted:" in log and "rerun the same command" in log
    done = sorted(p.parent.parent.name for p in out.glob("*/drift/grade.json"))
    assert 1 <= len(done) < len(students), log[-3000:]
    assert not [p for p in out.glob("*/drift") if not (p / "grade.json").exists()]  # nothing half-published
    lines = []
    res = grade_submissions(subs, course=c, out=out, workers=1, log=lines.append)
    assert res["skipped"] == len(done) and res["graded"] == len(students) - len(done)
    with Gradebook(f"sqlite:///{c / 'gradebook.db'}") as gb:
        scores = {st: gb.find_submission("drift", st).score for st in students}
    assert scores == {st: 7.0 for st in students}
    rows = list(csv.DictReader(open(out / "grades.csv")))
    assert [r["student"] for r in rows] == students and {r["auto_score"] for r in rows} == {"7"}
