"""``clkit course grade``: autograde a folder of submissions, resumable, on Dask.

The submissions folder has nbgrader's ``submitted/`` layout::

    SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb

Each submission is one Dask task (:mod:`clkit.sweep`'s local cluster, or an
existing scheduler with ``scheduler="tcp://host:port"``; its workers must see the
folders on a shared file system). A task copies the course's gradebook into a
private work folder, checks the notebook, runs nbgrader ``autograde`` and
``generate_feedback`` there, and publishes ``OUT/<student>/<assignment>/`` in one
rename once its ``grade.json`` is written. Nothing is graded twice: a submission
whose ``grade.json`` carries the same key (student, assignment, the notebook's
bytes, the assignment's source hash, clkit's version) is skipped.

Before running a notebook the task checks it: a file that is not a notebook, a
required cell deleted (or its nbgrader metadata removed), or Python that does not
compile (a ``SyntaxError`` in any cell the student edits) is *not run* and scores
zero, with a message naming the student, the file and the cell. A notebook that
runs is graded cell by cell as nbgrader does (a failing test loses its points).

Results (``OUT`` defaults to ``<SUBMISSIONS>-graded``)::

    grades.csv              one row per submission: auto / manual / total points, errors
    manual_grades.csv       one row per hand-graded cell; fill in ``points`` (kept on reruns)
    <student>/<assignment>/ grade.json, the autograded notebook, feedback.html
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import time
import uuid
from pathlib import Path

from .. import __version__
from .._io import atomic_write_json, atomic_write_text
from .build import ASSIGNMENTS, COURSE_ID, build_course, nbgrader_api, source_hash

__all__ = ["SubmissionError", "find_submissions", "check_submission", "grade_one", "grade_submissions",
           "write_tables", "GRADE_COLUMNS", "MANUAL_COLUMNS"]

GRADE_COLUMNS = ["student", "assignment", "status", "auto_score", "auto_max", "manual_score", "manual_max",
                 "total", "max_score", "failed_tests", "error"]
MANUAL_COLUMNS = ["student", "assignment", "cell", "max_points", "points", "comment"]
LAYOUT = "SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb"


class SubmissionError(ValueError):
    """A submission that cannot be graded (not run; it scores zero)."""


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
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        if entry.is_file():
            if entry.suffix == ".ipynb":
                raise ValueError(f"{entry}: a notebook directly in the submissions folder; expected the layout "
                                 f"{LAYOUT} (one folder per student)")
            continue
        student = entry.name
        for sub in sorted(entry.iterdir()):
            if sub.name.startswith("."):
                continue
            if sub.is_file():
                if sub.suffix == ".ipynb":
                    raise ValueError(f"student {student!r}: {sub} is not inside an assignment folder; expected "
                                     f"{root}/{student}/<assignment>/<assignment>.ipynb")
                continue
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


def check_submission(path, release, student: str = "?") -> None:
    """Check a submitted notebook before it runs; raise :class:`SubmissionError` if it cannot be graded.

    ``release`` is the student version it was made from. Checked: the file is a
    notebook; every cell nbgrader tracks (solutions, tests, answers) is still
    there; every code cell the student can edit compiles (IPython magics allowed).
    """
    import nbformat
    from IPython.core.inputtransformer2 import TransformerManager

    where = f"student {student!r}, file {path}"
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:  # noqa: BLE001 - invalid JSON, wrong format, ...
        raise SubmissionError(f"{where}: not a readable notebook ({type(exc).__name__}: {exc})") from None
    want = _nbgrader_cells(nbformat.read(str(release), as_version=4))
    have = _nbgrader_cells(nb)
    missing = [gid for gid in want if gid not in have]
    if missing:
        raise SubmissionError(f"{where}: missing required cell(s) {missing} (deleted, or their nbgrader "
                              "metadata removed); copy them back from the released notebook")
    tm = TransformerManager()
    for i, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or meta.get("locked"):
            continue  # locked cells are restored from the course's copy before grading
        try:
            compile(tm.transform_cell(cell.source), f"cell {i}", "exec")
        except SyntaxError as exc:
            label = meta.get("grade_id", "unlabelled cell")
            raise SubmissionError(f"{where}: SyntaxError in cell {i} ({label}), line {exc.lineno}: {exc.msg}; "
                                  "the notebook was not run") from None


def _key(sub: dict, src_hash: str) -> str:
    blob = hashlib.sha256(Path(sub["path"]).read_bytes()).hexdigest()
    rec = {"student": sub["student"], "assignment": sub["assignment"], "notebook": blob, "source": src_hash,
           "clkit": __version__}
    return hashlib.sha256(json.dumps(rec, sort_keys=True).encode()).hexdigest()


def _status(out: Path, sub: dict) -> dict | None:
    try:
        return json.loads((out / sub["student"] / sub["assignment"] / "grade.json").read_text())
    except (OSError, ValueError):
        return None


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


def grade_one(spec: dict) -> dict:
    """Grade one submission (the Dask task); return its ``grade.json`` record.

    ``spec`` holds ``student``, ``assignment``, ``path`` (the notebook), ``course``
    (the built course directory), ``out`` and ``key``. Never raises for a bad
    submission: it is recorded with ``status="error"`` and zero points.
    """
    import warnings

    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader's SQLAlchemy use
    student, assignment = spec["student"], spec["assignment"]
    out, course = Path(spec["out"]), Path(spec["course"])
    done = _status(out, spec)
    if done and done.get("key") == spec["key"]:
        return done
    t0 = time.perf_counter()
    release = course / "release" / assignment / f"{assignment}.ipynb"
    tests, manual = _release_cells(release)
    rec = {"key": spec["key"], "student": student, "assignment": assignment, "file": spec["path"],
           "status": "graded", "error": None, "tests": {k: {"score": 0.0, "max": v} for k, v in tests.items()},
           "manual": {k: {"max": v} for k, v in manual.items()}, "cell_errors": []}
    work = out / ".work" / f"{student}.{assignment}.{uuid.uuid4().hex[:8]}"
    final_work = work / "result"
    final_work.mkdir(parents=True)
    try:
        try:
            check_submission(spec["path"], release, student)
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
        dest = out / student / assignment
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            trash = out / ".work" / f"old.{student}.{assignment}.{uuid.uuid4().hex[:8]}"
            os.replace(dest, trash)
            shutil.rmtree(trash, ignore_errors=True)
        os.replace(final_work, dest)
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


def _autograde(spec, course: Path, work: Path, final_work: Path, rec: dict) -> None:
    """nbgrader autograde + generate_feedback in a private copy of the course; fill ``rec``."""
    from nbgrader.api import Gradebook

    student, assignment = spec["student"], spec["assignment"]
    root = work / "course"
    (root / "source").mkdir(parents=True)
    shutil.copy2(course / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copy2(course / "gradebook.db", root / "gradebook.db")
    shutil.copytree(course / "source" / assignment, root / "source" / assignment)
    shutil.copytree(Path(spec["path"]).parent, root / "submitted" / student / assignment,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    api = nbgrader_api(root)
    res = api.autograde(assignment, student, force=True, create=True)
    if not res.get("success"):
        log = (res.get("error") or "") + (res.get("log") or "")
        rec.update(status="error", error=f"student {student!r}, file {spec['path']}: nbgrader autograde failed: "
                                         f"{log.strip().splitlines()[-1] if log.strip() else 'no log'}")
        return
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}", COURSE_ID) as gb:
        sub = gb.find_submission(assignment, student)
        for nb in sub.notebooks:
            for g in nb.grades:
                if g.name in rec["tests"]:
                    rec["tests"][g.name]["score"] = float(g.score or 0.0)
    graded_nb = root / "autograded" / student / assignment / f"{assignment}.ipynb"
    rec["cell_errors"] = _cell_errors(graded_nb)
    shutil.copy2(graded_nb, final_work / f"{assignment}.ipynb")
    fb = api.generate_feedback(assignment, student, force=True)
    html = root / "feedback" / student / assignment / f"{assignment}.html"
    if fb.get("success") and html.exists():
        shutil.copy2(html, final_work / "feedback.html")


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
                       "failed_tests": " ".join(failed), "error": rec["error"] or ""})
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
        it lacks an assignment that was submitted).
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
        because they could not be run, earlier ones included), ``failed`` (tasks
        that crashed; retried on the next run), ``out``, ``grades``, ``wall_s``.

    Raises
    ------
    ValueError
        Wrong layout or unknown assignment (see :func:`find_submissions`).
    ConnectionError
        ``scheduler`` cannot be reached.
    """
    from .._validate import check_int
    from ..cluster import default_workers

    t0 = time.perf_counter()
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
    if todo:
        _run(todo, counts, workers, scheduler, log)
    counts["errors"] = []
    for s in subs:
        rec = _status(out, s)
        if rec and rec["status"] == "error":
            counts["errors"].append({"student": s["student"], "assignment": s["assignment"], "error": rec["error"]})
            log(f"[clkit] {s['student']}/{s['assignment']}: graded 0: {rec['error']}")
    grades, manual = write_tables(out)
    counts["grades"] = str(grades)
    counts["wall_s"] = round(time.perf_counter() - t0, 2)
    log(f"[clkit] course grade: {counts['total']} submission(s): {counts['graded']} graded, {skipped} graded "
        f"before, {len(counts['errors'])} not runnable (zero), {len(counts['failed'])} failed to grade "
        f"in {counts['wall_s']:.1f} s -> {grades} (hand-graded cells: {manual})")
    return counts


def _run(todo: list, counts: dict, workers: int, scheduler, log) -> None:
    """Submit one :func:`grade_one` task per submission to Dask and collect them."""
    from ..cluster import close_client as _close, start_client as _client

    client, cluster = _client(workers, scheduler)
    where = scheduler or f"a local cluster of {workers} worker process(es)"
    log(f"[clkit] course grade: {len(todo)} submission(s) to grade on {where}")
    try:
        run_id = uuid.uuid4().hex[:8]
        futures = {client.submit(grade_one, spec, key=f"clkit-grade-{spec['key'][:12]}-{run_id}", pure=False): spec
                   for spec in todo}
        from distributed import as_completed

        for fut in as_completed(list(futures)):
            spec = futures[fut]
            try:
                rec = fut.result()
            except Exception as exc:  # noqa: BLE001 - the worker died or the task could not run
                counts["failed"].append({"student": spec["student"], "assignment": spec["assignment"],
                                         "error": f"{type(exc).__name__}: {exc}"})
                log(f"[clkit] {spec['student']}/{spec['assignment']}: grading failed: {type(exc).__name__}: {exc}")
                continue
            counts["graded"] += 1
            log(f"[clkit] {spec['student']}/{spec['assignment']}: {rec['auto_score']:g}/{rec['auto_max']:g} "
                f"autograded points ({rec['status']})")
    finally:
        _close(client, cluster)
