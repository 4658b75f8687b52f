"""``clkit course grade``: autograde a folder of submissions with nbgrader, resumable, on Dask.

The submissions folder has nbgrader's ``submitted/`` layout::

    SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb

Each submission is one Dask task (:mod:`clkit.sweep`'s local cluster, or an
existing scheduler with ``scheduler="tcp://host:port"``; its workers must see the
folders on a shared file system). A task runs nbgrader's own ``autograde`` and
``generate_feedback`` in a private copy of the course (so tasks never write one
SQLite file at once) and publishes ``OUT/<student>/<assignment>/`` in one rename
once its ``grade.json`` is written. Scoring is nbgrader's, cell by cell: a cell
with a ``SyntaxError`` fails, and so do the tests that need it, while the other
tests still earn their points; a deleted test cell is put back and run
(``OverwriteCells.add_missing_cells``); a changed locked cell is restored. Each
of these is reported (``notes`` in ``grades.csv``). Only a file that is not a
notebook cannot be run: it scores zero and is flagged.

Hidden tests: nbgrader's gradebook keeps the checksum of each test cell *with*
its hidden tests, while students receive the cell without them, so nbgrader's
``autograde`` warns "checksum has changed" for every hidden-test cell of every
student (nbgrader issue 1961) and restores the cell. Here a locked cell whose
checksum is that of the released cell is put back to the gradebook's version
first, so nbgrader checks it against its own checksum silently, and the
warning -- and a note -- is left for a locked cell the student really changed.

The course's gradebook (``COURSE/gradebook.db``) then receives every result
through nbgrader's API (:class:`nbgrader.api.Gradebook`): the student, the
submission (with nbgrader's ``timestamp.txt`` when present), each test's
automatic score and each answer's comment, as ``autograde`` writes them; the
submitted and autograded notebooks are copied to ``COURSE/submitted/`` and
``COURSE/autograded/``. So ``nbgrader formgrader`` (manual grading),
``nbgrader export`` and ``nbgrader generate_feedback`` work in the course
directory. This happens in the calling process as each result arrives, so an
interrupt (Ctrl-C) keeps everything graded so far, and a rerun grades only the
rest. Nothing is graded twice: a submission whose ``grade.json`` carries the same
key (student, assignment, the notebook's bytes, the assignment's source hash,
clkit's version) is skipped.

Results (``OUT`` defaults to ``<SUBMISSIONS>-graded``)::

    grades.csv              one row per submission: auto / manual / total points, notes, errors
    manual_grades.csv       one row per hand-graded cell; fill in ``points`` (kept on reruns)
    <student>/<assignment>/ grade.json, the autograded notebook, feedback.html

Hand-graded points go both ways: points typed into ``manual_grades.csv`` are
written to the gradebook as the manual score; points given in formgrader show
in ``manual_grades.csv`` where its cell is still empty.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
import sqlite3
import time
import uuid
from pathlib import Path

from .. import __version__
from .._io import atomic_write_json, atomic_write_text, replace_dir
from .build import ASSIGNMENTS, COURSE_ID, build_course, nbgrader_api, source_hash

__all__ = ["SubmissionError", "GradingInterrupted", "find_submissions", "check_submission", "grade_one",
           "grade_submissions", "sync_gradebook", "write_tables", "GRADE_COLUMNS", "MANUAL_COLUMNS"]

GRADE_COLUMNS = ["student", "assignment", "status", "auto_score", "auto_max", "manual_score", "manual_max",
                 "total", "max_score", "failed_tests", "notes", "error"]
MANUAL_COLUMNS = ["student", "assignment", "cell", "max_points", "points", "comment"]
LAYOUT = "SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb"
SYNCED = "gradebook.json"  # beside grade.json: which gradebook received this result


class SubmissionError(ValueError):
    """A submission that cannot be graded (not a notebook; it scores zero)."""


class GradingInterrupted(KeyboardInterrupt):
    """Raised by :func:`grade_submissions` after Ctrl-C, once the workers are stopped.

    ``counts`` says what was graded (kept in the results folder and the gradebook);
    rerunning the same command grades the rest.
    """

    def __init__(self, counts: dict):
        super().__init__(f"grading interrupted: {counts}")
        self.counts = counts


def _entries(folder: Path, where: str, expected: str) -> list[Path]:
    """The sub-folders of ``folder`` (hidden entries and non-notebook files skipped); a notebook
    lying here is refused, since it belongs one level deeper."""
    out = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file():
            if entry.suffix == ".ipynb":
                raise ValueError(f"{where}{entry} {expected}")
            continue
        out.append(entry)
    return out


def find_submissions(submissions) -> list[dict]:
    """Every ``(student, assignment, notebook)`` under a submissions folder.

    Raises
    ------
    ValueError
        The folder is missing or not in the layout ``SUBMISSIONS/<student>/<assignment>/
        <assignment>.ipynb`` (a notebook outside an assignment folder, an unknown
        assignment, an assignment folder without its notebook); the message names
        the student and the path.
    """
    root = Path(submissions)
    if not root.is_dir():
        raise ValueError(f"submissions folder {root} does not exist (expected the layout {LAYOUT})")
    found = []
    for entry in _entries(root, "", f": a notebook directly in the submissions folder; expected the layout {LAYOUT} "
                                    "(one folder per student)"):
        student = entry.name
        for sub in _entries(entry, f"student {student!r}: ", f"is not inside an assignment folder; expected "
                                                             f"{root}/{student}/<assignment>/<assignment>.ipynb"):
            if sub.name not in ASSIGNMENTS:
                raise ValueError(f"student {student!r}: unknown assignment {sub.name!r} ({sub}); "
                                 f"assignments are {list(ASSIGNMENTS)}")
            nb = sub / f"{sub.name}.ipynb"
            if not nb.is_file():
                have = sorted(p.name for p in sub.iterdir() if not p.name.startswith("."))
                raise ValueError(f"student {student!r}, assignment {sub.name!r}: {nb} not found "
                                 f"(the folder holds {have}); expected {LAYOUT}")
            found.append({"student": student, "assignment": sub.name, "path": str(nb.resolve())})
    if not found:
        raise ValueError(f"no submissions found in {root}; expected the layout {LAYOUT}")
    return found


def _nbgrader_cells(nb) -> dict:
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if "nbgrader" in c.metadata and "grade_id" in c.metadata["nbgrader"]}


def check_submission(path, release, student: str = "?", source=None) -> list[str]:
    """Check a submitted notebook before nbgrader runs it; return notes for the grader.

    ``release`` is the student version it was made from; ``source``, optionally,
    the instructor's version (a locked cell equal to either is unchanged). A file that is not a
    notebook raises :class:`SubmissionError` (it cannot be run; it scores zero).
    Everything else is graded as nbgrader grades it, and noted: a cell nbgrader
    tracks that is missing (nbgrader puts test cells back and runs them), a code
    cell the student edits that does not compile (it fails when run, with the
    tests that need it), a locked cell that was changed (nbgrader restores it).

    Returns
    -------
    list of str
        One line per finding, naming the cell; empty for a clean submission.
    """
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager
    from nbgrader.utils import compute_checksum

    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - invalid JSON, wrong format, ...
        raise SubmissionError(f"student {student!r}, file {path}: not a readable notebook "
                              f"({type(exc).__name__}: {exc})") from None
    want = _nbgrader_cells(nbformat.read(str(release), as_version=4))
    have = _nbgrader_cells(nb)
    ok = {gid: {compute_checksum(c)} for gid, c in want.items()}
    if source is not None:
        for gid, c in _nbgrader_cells(nbformat.read(str(source), as_version=4)).items():
            ok.setdefault(gid, set()).add(compute_checksum(c))
    notes = []
    missing = [gid for gid in want if gid not in have]
    if missing:
        notes.append(f"missing cell(s) {missing} (deleted, or their nbgrader metadata removed): tests are put back "
                     "and run, answers score zero")
    tm = TransformerManager()
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        label = meta.get("grade_id", "unlabelled cell")
        if meta.get("locked"):
            if label in want and compute_checksum(cell) not in ok[label]:
                notes.append(f"locked cell {i} ({label}) was changed; nbgrader restores it")
            continue
        if cell.cell_type != "code":
            continue
        try:
            compile(tm.transform_cell(cell.source), f"cell {i}", "exec")
        except SyntaxError as exc:
            notes.append(f"SyntaxError in cell {i} ({label}), line {exc.lineno}: {exc.msg}")
    return notes


def _key(sub: dict, src_hash: str) -> str:
    blob = hashlib.sha256(Path(sub["path"]).read_bytes()).hexdigest()
    rec = {"student": sub["student"], "assignment": sub["assignment"], "notebook": blob, "source": src_hash,
           "clkit": __version__}
    return hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _status(out: Path, sub: dict) -> dict | None:
    return _read_json(out / sub["student"] / sub["assignment"] / "grade.json")


def _release_cells(release) -> tuple[dict, dict]:
    """``({test_id: points}, {manual_id: points})`` of the released notebook."""
    import nbformat

    tests, manual = {}, {}
    for gid, c in _nbgrader_cells(nbformat.read(str(release), as_version=4)).items():
        meta = c.metadata["nbgrader"]
        if meta.get("grade") and (meta.get("solution") or meta.get("task")):
            manual[gid] = float(meta.get("points", 0))
        elif meta.get("grade"):
            tests[gid] = float(meta.get("points", 0))
    return tests, manual


def _cell_errors(autograded) -> list[str]:
    import nbformat

    nb = nbformat.read(str(autograded), as_version=4)
    errs = []
    for i, c in enumerate(nb.cells):
        if c.cell_type != "code":
            continue
        for o in c.get("outputs", []):
            if o.get("output_type") == "error":
                label = c.metadata.get("nbgrader", {}).get("grade_id", f"cell {i}")
                errs.append(f"{label}: {o.get('ename')}: {str(o.get('evalue'))[:200]}")
    return errs


def quiet_nbgrader_warnings() -> None:
    """Silence SQLAlchemy's ``SAWarning`` blocks that nbgrader's gradebook code raises on every grading run
    (its object-session use, not a fault of the submissions), in this process: they printed as if grading
    had failed. clkit's own notes and nbgrader's log warnings (``grade.json``) are not affected."""
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")
    try:
        from sqlalchemy.exc import SAWarning
    except ImportError:   # nbgrader without SQLAlchemy cannot be: kept for safety
        return
    warnings.filterwarnings("ignore", category=SAWarning)


def timeout_notes(cell_errors) -> list[str]:
    """A note for every cell nbgrader stopped at its time limit (``CellTimeoutError``): the reason the tests
    after it fail, said in ``grades.csv`` and on the terminal (it was missing: two failed tests, no reason).

    Examples
    --------
    >>> timeout_notes(["loop: CellTimeoutError: No reply from kernel before timeout", "t1: AssertionError: x"])
    ['cell loop did not finish within the 120 s limit per cell (an endless loop?); the tests after it could not run']
    """
    from .build import CELL_TIMEOUT_S

    return [f"cell {e.split(': ', 1)[0]} did not finish within the {CELL_TIMEOUT_S} s limit per cell (an endless "
            "loop?); the tests after it could not run" for e in cell_errors if ": CellTimeoutError:" in e]


def grade_one(spec: dict) -> dict:
    """Grade one submission (the Dask task); return its ``grade.json`` record.

    ``spec`` holds ``student``, ``assignment``, ``path`` (the notebook), ``course``
    (the built course directory), ``gradebook`` (a snapshot of the course's
    gradebook to start from), ``out`` and ``key``. Never raises for a bad
    submission: one that cannot be run is recorded with ``status="error"`` and
    zero points.
    """
    quiet_nbgrader_warnings()
    student, assignment = spec["student"], spec["assignment"]
    out, course = Path(spec["out"]), Path(spec["course"])
    done = _status(out, spec)
    if done and done.get("key") == spec["key"]:
        return done
    t0 = time.perf_counter()
    release = course / "release" / assignment / f"{assignment}.ipynb"
    tests, manual = _release_cells(release)
    rec = {"key": spec["key"], "student": student, "assignment": assignment, "file": spec["path"],
           "status": "graded", "error": None, "notes": [],
           "tests": {k: {"score": 0.0, "max": v} for k, v in tests.items()},
           "manual": {k: {"max": v} for k, v in manual.items()}, "cell_errors": [], "comments": {},
           "timestamp": None, "nbgrader_warnings": []}
    work = out / ".work" / f"{student}.{assignment}.{uuid.uuid4().hex[:8]}"
    final_work = work / "result"
    final_work.mkdir(parents=True)
    try:
        try:
            rec["notes"] = check_submission(spec["path"], release, student,
                                            course / "source" / assignment / f"{assignment}.ipynb")
        except SubmissionError as exc:
            rec.update(status="error", error=str(exc))
        else:
            _autograde(spec, course, work, final_work, rec)
        rec["auto_score"] = sum(t["score"] for t in rec["tests"].values())
        rec["auto_max"] = sum(t["max"] for t in rec["tests"].values())
        rec["manual_max"] = sum(m["max"] for m in rec["manual"].values())
        if rec["status"] == "error":
            _error_feedback(final_work / "feedback.html", rec)
        rec["runtime_s"] = round(time.perf_counter() - t0, 2)
        rec["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
        atomic_write_json(final_work / "grade.json", rec)
        replace_dir(final_work, out / student / assignment)
        return rec
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _error_feedback(path: Path, rec: dict) -> None:
    """A one-page feedback for a submission that could not be run."""
    from html import escape

    total = rec["auto_max"] + rec["manual_max"]
    atomic_write_text(path, f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{escape(rec['assignment'])}"
                            f"</title></head><body>\n<h1>{escape(rec['assignment'])}: feedback for "
                            f"{escape(rec['student'])}</h1>\n<p>Your notebook could not be graded, so it scores "
                            f"0 / {total:g} (Score: 0 / {total:g}):</p>\n<pre>{escape(rec['error'])}</pre>\n"
                            "<p>Fix this, run <em>Kernel &gt; Restart &amp; Run All</em>, and hand it in "
                            "again.</p>\n</body></html>\n")


def _restore_hidden_tests(nb_path: Path, release: Path, gradebook: Path, assignment: str) -> None:
    """Put the gradebook's version (hidden tests included) into every locked cell that is exactly
    the released one, so nbgrader's checksum check passes silently (see the module docstring)."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.utils import compute_checksum

    nb = nbformat.read(str(nb_path), as_version=4)
    released = _nbgrader_cells(nbformat.read(str(release), as_version=4))
    changed = False
    with Gradebook(f"sqlite:///{gradebook}", COURSE_ID) as gb:
        for gid, cell in _nbgrader_cells(nb).items():
            if not cell.metadata["nbgrader"].get("locked") or gid not in released:
                continue
            if compute_checksum(cell) != compute_checksum(released[gid]):
                continue  # changed by the student: nbgrader restores it and says so
            try:
                src = gb.find_source_cell(gid, assignment, assignment)
            except MissingEntry:
                continue
            if cell.source != src.source:
                cell.source = src.source
                changed = True
    if changed:
        nbformat.write(nb, str(nb_path))


def _autograde(spec, course: Path, work: Path, final_work: Path, rec: dict) -> None:
    """nbgrader autograde + generate_feedback in a private copy of the course; fill ``rec``."""
    from nbgrader.api import Gradebook

    student, assignment = spec["student"], spec["assignment"]
    root = work / "course"
    (root / "source").mkdir(parents=True)
    shutil.copy2(course / "nbgrader_config.py", root / "nbgrader_config.py")
    db = root / "gradebook.db"
    shutil.copy2(spec["gradebook"], db)
    shutil.copytree(course / "source" / assignment, root / "source" / assignment)
    submitted = root / "submitted" / student / assignment
    shutil.copytree(Path(spec["path"]).parent, submitted, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    _restore_hidden_tests(submitted / f"{assignment}.ipynb", course / "release" / assignment / f"{assignment}.ipynb",
                          db, assignment)
    api = nbgrader_api(root)
    res = api.autograde(assignment, student, force=True, create=True)
    rec["nbgrader_warnings"] = [ln.split("] ", 1)[-1] for ln in (res.get("log") or "").splitlines()
                                if "WARNING" in ln]
    if not res.get("success"):
        log = (res.get("error") or "") + (res.get("log") or "")
        rec.update(status="error", error=f"student {student!r}, file {spec['path']}: nbgrader autograde failed: "
                                         f"{log.strip().splitlines()[-1] if log.strip() else 'no log'}")
        return
    with Gradebook(f"sqlite:///{db}", COURSE_ID) as gb:
        sub = gb.find_submission(assignment, student)
        rec["timestamp"] = sub.timestamp.isoformat() if sub.timestamp else None
        for nb in sub.notebooks:
            for g in nb.grades:
                if g.name in rec["tests"]:
                    rec["tests"][g.name]["score"] = float(g.auto_score or 0.0)
                    rec["tests"][g.name]["auto_score"] = g.auto_score
                elif g.name in rec["manual"]:
                    rec["manual"][g.name]["auto_score"] = g.auto_score
            rec["comments"] = {c.name: c.auto_comment for c in nb.comments}
    graded_nb = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    rec["cell_errors"] = _cell_errors(graded_nb)
    rec["notes"] = list(rec.get("notes", [])) + timeout_notes(rec["cell_errors"])
    shutil.copy2(graded_nb, final_work / f"{assignment}.ipynb")
    fb = api.generate_feedback(assignment, student, force=True)
    html = root / "feedback" / student / assignment / f"{assignment}.html"
    if fb.get("success") and html.exists():
        shutil.copy2(html, final_work / "feedback.html")


# --------------------------------------------------------------------------- the course's gradebook

def _snapshot(db: Path, dest: Path) -> Path:
    """A consistent copy of the SQLite file ``db`` (SQLite's backup API), for the tasks to start from."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as src, sqlite3.connect(dest) as dst:
        src.backup(dst)
    return dest


def _copy_in(src: Path, dest: Path, files) -> None:
    """Replace the folder ``dest`` by one holding ``files`` of ``src`` (atomically; nothing when the same)."""
    if src.resolve() == dest.resolve():
        return
    tmp = dest.parent / f".{dest.name}.new.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    for f in files:
        shutil.copy2(src / f, tmp / f)
    replace_dir(tmp, dest)


def sync_gradebook(course, out, rec: dict, sub_folder=None) -> bool:
    """Write one graded submission into the course's nbgrader gradebook; ``False`` if it was there.

    Through :class:`nbgrader.api.Gradebook`, as nbgrader's ``autograde`` writes:
    the student and the submission are created or updated, each test's
    ``auto_score`` and each answer's ``auto_comment`` set, ``needs_manual_grade``
    by nbgrader's rule (a cell without an automatic score, or one a grader has
    scored before). Manual scores already given are kept. A submission that could
    not be run gets zero on every test and is flagged for the grader. The
    submitted and autograded notebooks are copied to ``course/submitted/`` and
    ``course/autograded/`` for formgrader. Idempotent: ``OUT/<student>/<assignment>/
    gradebook.json`` records which result went into which gradebook.
    """
    from nbgrader.api import Gradebook

    course, out = Path(course), Path(out)
    student, assignment = rec["student"], rec["assignment"]
    result = out / student / assignment
    db = (course / "gradebook.db").resolve()
    marker = {"key": rec["key"], "gradebook": str(db), "assignment_id": None}
    with Gradebook(f"sqlite:///{db}", COURSE_ID) as gb:
        marker["assignment_id"] = gb.find_assignment(assignment).id
        if _read_json(result / SYNCED) == marker:
            return False
        nb_name = f"{assignment}.ipynb"
        src = Path(sub_folder) if sub_folder else Path(rec["file"]).parent
        if (src / nb_name).exists():
            extra = [p.name for p in src.iterdir() if p.name == "timestamp.txt"]
            _copy_in(src, course / "submitted" / student / assignment, [nb_name, *extra])
        if (result / nb_name).exists():
            _copy_in(result, course / "autograded" / student / assignment, [nb_name])
        gb.update_or_create_student(student)
        kw = {"timestamp": rec["timestamp"]} if rec.get("timestamp") else {}
        gb.update_or_create_submission(assignment, student, **kw)
        error = rec["status"] == "error"
        for name, cell in {**rec["tests"], **rec["manual"]}.items():
            grade = gb.find_grade(name, assignment, assignment, student)
            grade.auto_score = 0.0 if error and name in rec["tests"] else cell.get("auto_score")
            grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        for name, text in rec.get("comments", {}).items():
            gb.find_comment(name, assignment, assignment, student).auto_comment = text
        gb.find_submission_notebook(assignment, assignment, student).flagged = error
        gb.db.commit()
    atomic_write_json(result / SYNCED, marker)
    return True


def _sync_manual(course: Path, out: Path) -> None:
    """Hand-graded points both ways between ``manual_grades.csv`` and the gradebook (see module docstring)."""
    from nbgrader.api import Gradebook, MissingEntry

    path = out / "manual_grades.csv"
    entered = _read_manual(path)
    recs = [r for r in (_read_json(p) for p in sorted(out.glob("*/*/grade.json"))) if r and r["manual"]]
    if not recs:
        return
    changed = False
    with Gradebook(f"sqlite:///{(course / 'gradebook.db').resolve()}", COURSE_ID) as gb:
        for rec in recs:
            st, asg = rec["student"], rec["assignment"]
            for cell in rec["manual"]:
                row = entered.get((st, asg, cell))
                try:
                    grade = gb.find_grade(cell, asg, asg, st)
                    comment = gb.find_comment(cell, asg, asg, st)
                except MissingEntry:
                    continue
                pts = (row or {}).get("points", "").strip()
                if pts:
                    try:
                        val = float(pts)
                    except ValueError:
                        continue  # write_tables names the bad row
                    if grade.manual_score != val:
                        grade.manual_score, grade.needs_manual_grade = val, False
                        comment.manual_comment = (row or {}).get("comment") or comment.manual_comment
                        changed = True
                elif grade.manual_score is not None:  # given in formgrader
                    entered[(st, asg, cell)] = {"points": f"{grade.manual_score:g}",
                                                "comment": comment.manual_comment or ""}
        if changed:
            gb.db.commit()
    if entered:
        atomic_write_text(path, _csv([{"student": s, "assignment": a, "cell": c, **v}
                                      for (s, a, c), v in entered.items()], MANUAL_COLUMNS))


# --------------------------------------------------------------------------- tables

def _read_manual(path: Path) -> dict:
    if not path.exists():
        return {}
    with open(path, newline="") as f:
        return {(r["student"], r["assignment"], r["cell"]): r for r in csv.DictReader(f)}


def _csv(rows, columns) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def write_tables(out) -> tuple[Path, Path]:
    """Write ``grades.csv`` and ``manual_grades.csv`` from every ``grade.json`` under ``out``.

    Points already entered in ``manual_grades.csv`` are kept and added to the
    totals. Raises ``ValueError`` naming the row when an entered value is not a
    number between 0 and the cell's maximum.
    """
    out = Path(out)
    manual_path = out / "manual_grades.csv"
    entered = _read_manual(manual_path)
    grades, manual_rows = [], []
    for path in sorted(out.glob("*/*/grade.json")):
        rec = json.loads(path.read_text())
        st, asg = rec["student"], rec["assignment"]
        manual_score, all_entered = 0.0, True
        for cell, m in rec["manual"].items():
            old = entered.get((st, asg, cell), {})
            pts = (old.get("points") or "").strip()
            if pts:
                try:
                    val = float(pts)
                except ValueError:
                    val = None
                if val is None or not 0 <= val <= m["max"]:
                    raise ValueError(f"{manual_path}: student {st!r}, assignment {asg!r}, cell {cell!r}: points "
                                     f"must be a number in [0, {m['max']:g}], got {pts!r}")
                manual_score += val
            else:
                all_entered = False
            manual_rows.append({"student": st, "assignment": asg, "cell": cell, "max_points": f"{m['max']:g}",
                                "points": pts, "comment": old.get("comment", "")})
        failed = [k for k, t in rec["tests"].items() if t["score"] < t["max"]]
        ms = manual_score if (all_entered and rec["manual"]) else (manual_score or "")
        grades.append({"student": st, "assignment": asg, "status": rec["status"],
                       "auto_score": f"{rec['auto_score']:g}", "auto_max": f"{rec['auto_max']:g}",
                       "manual_score": f"{ms:g}" if ms != "" else "", "manual_max": f"{rec['manual_max']:g}",
                       "total": f"{rec['auto_score'] + manual_score:g}",
                       "max_score": f"{rec['auto_max'] + rec['manual_max']:g}",
                       "failed_tests": " ".join(failed), "notes": "; ".join(rec.get("notes", [])),
                       "error": rec["error"] or ""})
    grades_path = atomic_write_text(out / "grades.csv", _csv(grades, GRADE_COLUMNS))
    atomic_write_text(manual_path, _csv(manual_rows, MANUAL_COLUMNS))
    return grades_path, manual_path


def _course_ready(course: Path, assignments) -> bool:
    return (course / "gradebook.db").exists() and all(
        (course / "release" / a / f"{a}.ipynb").exists() for a in assignments)


def grade_submissions(submissions, course="course", out=None, workers: int | None = None,
                      scheduler: str | None = None, log=print) -> dict:
    """Autograde every submission under ``submissions`` that is not graded yet.

    Parameters
    ----------
    submissions : str or Path
        Folder in the layout ``<student>/<assignment>/<assignment>.ipynb``.
    course : str or Path
        Course directory from :func:`~clkit.course.build_course` (built first if
        it lacks an assignment that was submitted); its gradebook receives the
        grades.
    out : str or Path, optional
        Results folder (default ``<submissions>-graded``).
    workers : int, optional
        Local Dask worker processes (default: the core count); ignored with ``scheduler``.
    scheduler : str, optional
        Address of an existing Dask scheduler.
    log : callable
        Receives the report lines.

    Returns
    -------
    dict
        ``total``, ``skipped`` (graded before), ``graded``, ``errors`` (list of
        ``{"student", "assignment", "error"}``: submissions that scored zero
        because they could not be run, earlier ones included), ``notes`` (list of
        ``{"student", "assignment", "notes"}``), ``failed`` (tasks that crashed;
        retried on the next run), ``out``, ``grades``, ``wall_s``.

    Raises
    ------
    ValueError
        Wrong layout or unknown assignment (see :func:`find_submissions`).
    ConnectionError
        ``scheduler`` cannot be reached.
    GradingInterrupted
        Ctrl-C: what was graded is kept (results folder, tables, gradebook).
    """
    from .._validate import check_int
    from ..cluster import default_workers

    t0 = time.perf_counter()
    quiet_nbgrader_warnings()
    workers = default_workers() if workers is None else check_int("workers", workers, low=1)
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"scheduler must be an address string like 'tcp://host:8786', got {scheduler!r}")
    subs = find_submissions(submissions)
    course = Path(course).resolve()
    needed = sorted({s["assignment"] for s in subs}, key=ASSIGNMENTS.index)
    if not _course_ready(course, needed):
        log(f"[clkit] course directory {course} lacks {needed}: building it first")
        build_course(course, needed, log=log)
    out = Path(out) if out else Path(str(Path(submissions).resolve()).rstrip("/") + "-graded")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / ".work", ignore_errors=True)
    hashes = {a: source_hash(course / "source" / a / f"{a}.ipynb") for a in needed}
    todo, skipped = [], 0
    for s in subs:
        spec = {**s, "course": str(course), "out": str(out), "key": _key(s, hashes[s["assignment"]])}
        done = _status(out, s)
        if done and done.get("key") == spec["key"]:
            skipped += 1
        else:
            todo.append(spec)
    counts = {"total": len(subs), "skipped": skipped, "graded": 0, "failed": [], "out": str(out)}
    try:
        if todo:
            template = _snapshot(course / "gradebook.db", out / ".work" / "gradebook.db")
            for spec in todo:
                spec["gradebook"] = str(template)
            _run(todo, counts, workers, scheduler, log)
    except GradingInterrupted:
        _finish(subs, course, out, counts, t0, log, {spec["key"] for spec in todo})
        log(f"[clkit] interrupted: {counts['graded']} submission(s) graded and kept (results and gradebook), "
            f"{len(todo) - counts['graded']} not graded; rerun the same command to grade them")
        raise
    return _finish(subs, course, out, counts, t0, log, {spec["key"] for spec in todo})


def _finish(subs, course: Path, out: Path, counts: dict, t0: float, log, todo_keys=frozenset()) -> dict:
    """Hand every result to the gradebook (idempotent), report, and write the tables."""
    counts["errors"], counts["notes"] = [], []
    for s in subs:
        rec = _status(out, s)
        if rec and sync_gradebook(course, out, rec, Path(s["path"]).parent) and rec["key"] in todo_keys:
            counts["graded"] += 1  # published by a worker, not collected before an interrupt
        if rec and rec["status"] == "error":
            counts["errors"].append({"student": s["student"], "assignment": s["assignment"], "error": rec["error"]})
            log(f"[clkit] {s['student']}/{s['assignment']}: graded 0: {rec['error']}")
        elif rec and rec.get("notes"):
            counts["notes"].append({"student": s["student"], "assignment": s["assignment"], "notes": rec["notes"]})
            log(f"[clkit] {s['student']}/{s['assignment']}: note: {'; '.join(rec['notes'])}")
    _sync_manual(course, out)
    grades, manual = write_tables(out)
    counts["grades"] = str(grades)
    counts["wall_s"] = round(time.perf_counter() - t0, 2)
    log(f"[clkit] course grade: {counts['total']} submission(s): {counts['graded']} graded, {counts['skipped']} "
        f"graded before, {len(counts['errors'])} not runnable (zero), {len(counts['failed'])} failed to grade "
        f"in {counts['wall_s']:.1f} s -> {grades} (hand-graded cells: {manual}); gradebook: "
        f"{course / 'gradebook.db'}")
    return counts


def _run(todo: list, counts: dict, workers: int, scheduler, log) -> None:
    """Submit one :func:`grade_one` task per submission to Dask; hand each result to the gradebook.

    Ctrl-C is taken by a SIGINT handler that only sets a flag, checked between results: a
    KeyboardInterrupt raised at a random point (Dask's own callbacks swallow some) could
    otherwise leave this loop waiting for workers that the same Ctrl-C has stopped.
    """
    import signal
    import threading

    from ..cluster import close_client as _close, start_client as _client

    stop = threading.Event()
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, lambda *_: stop.set()) if main else None
    client, cluster = _client(workers, scheduler)
    where = scheduler or f"a local cluster of {workers} worker process(es)"
    log(f"[clkit] course grade: {len(todo)} submission(s) to grade on {where}")
    futures = {}
    try:
        run_id = uuid.uuid4().hex[:8]
        futures = {client.submit(grade_one, spec, key=f"clkit-grade-{spec['key'][:12]}-{run_id}", pure=False): spec
                   for spec in todo}
        pending = set(futures)
        while pending and not stop.is_set():
            finished = [f for f in pending if f.done()]
            for fut in finished:
                pending.discard(fut)
                spec = futures[fut]
                try:
                    rec = fut.result()
                except Exception as exc:  # noqa: BLE001 - the worker died or the task could not run
                    counts["failed"].append({"student": spec["student"], "assignment": spec["assignment"],
                                             "error": f"{type(exc).__name__}: {exc}"})
                    log(f"[clkit] {spec['student']}/{spec['assignment']}: grading failed: {type(exc).__name__}: "
                        f"{exc}")
                    continue
                sync_gradebook(spec["course"], spec["out"], rec, Path(spec["path"]).parent)
                counts["graded"] += 1
                log(f"[clkit] {spec['student']}/{spec['assignment']}: {rec['auto_score']:g}/{rec['auto_max']:g} "
                    f"autograded points ({rec['status']})")
            if not finished:
                stop.wait(0.2)
        if stop.is_set():
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        log("[clkit] interrupted: stopping the workers ...")
        try:
            client.cancel(list(futures), force=True)
        except Exception:  # noqa: BLE001 - the cluster may already be going down
            pass
        _close(client, cluster)
        raise GradingInterrupted({k: (len(v) if isinstance(v, list) else v) for k, v in counts.items()}) from None
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    _close(client, cluster)
