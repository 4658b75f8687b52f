"""``clkit course build``: the student release of the assignments, with nbgrader.

A course directory (default ``course/``) in nbgrader's standard layout::

    nbgrader_config.py      course id, execution timeout, code stub
    course.json             clkit version and a hash of each assignment's source
    gradebook.db            nbgrader's gradebook (assignments, cells, checksums)
    source/<assignment>/    the instructor's versions (solutions, hidden tests, rubrics)
    release/<assignment>/   the student versions (generate_assignment)

Students get ``release/<assignment>/<assignment>.ipynb``; graders run
``clkit course grade`` on the collected submissions (:mod:`.grade`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from .. import __version__
from .._io import atomic_write_json, atomic_write_text, resource_dir

__all__ = ["ASSIGNMENTS", "COURSE_ID", "assignment_names", "build_course", "course_source_dir", "nbgrader_api",
           "source_hash", "CONFIG"]

#: The five assignments, in course order (one per paper of the kit).
ASSIGNMENTS = ("taskification", "edge", "temporal", "curriculum", "drift")
COURSE_ID = "clkit"
#: Seconds a single cell may run while grading (an endless loop costs the student that cell).
CELL_TIMEOUT_S = 120
# the kernel's "running over TCP without encryption" warning would end every grading log
KERNEL_ARGS = ["--IPKernelApp.log_level=CRITICAL"]

CONFIG = f'''# nbgrader configuration of the clkit course (written by `clkit course build`).
# Run nbgrader commands (nbgrader autograde, nbgrader formgrader, ...) from this folder.
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{COURSE_ID}"
c.Execute.timeout = {CELL_TIMEOUT_S}
c.Execute.extra_arguments = ["--IPKernelApp.log_level=CRITICAL"]
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# a test cell a student deleted is put back and run (nbgrader's own option)
c.OverwriteCells.add_missing_cells = True
'''


def course_source_dir() -> Path:
    """Folder holding the assignment sources (``$CLKIT_NOTEBOOKS/course/source``)."""
    env = os.environ.get("CLKIT_NOTEBOOKS")
    return (Path(env) if env else resource_dir("notebooks")) / "course" / "source"


def assignment_names(names=None) -> list[str]:
    """Check assignment names; ``None`` means all five, in course order.

    Examples
    --------
    >>> assignment_names(["edge", "drift"])
    ['edge', 'drift']
    >>> assignment_names(["edges"])
    Traceback (most recent call last):
    ...
    ValueError: unknown assignment 'edges'; assignments are ['taskification', 'edge', 'temporal', 'curriculum', 'drift']
    """
    if names is None:
        return list(ASSIGNMENTS)
    if isinstance(names, str):
        names = [names]
    out = []
    for n in names:
        if n not in ASSIGNMENTS:
            raise ValueError(f"unknown assignment {n!r}; assignments are {list(ASSIGNMENTS)}")
        if n not in out:
            out.append(n)
    return out


def source_hash(notebook) -> str:
    """SHA-256 of a notebook's cell types, sources and nbgrader metadata (outputs ignored)."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    cells = [[c.cell_type, c.source, c.metadata.get("nbgrader", {})] for c in nb.cells]
    return hashlib.sha256(json.dumps(cells, sort_keys=True).encode()).hexdigest()


def _tools_on_path() -> None:
    """Put this interpreter's ``bin/`` on ``PATH``: nbgrader runs ``alembic`` as a program."""
    import sys

    bindir = str(Path(sys.executable).parent)
    parts = os.environ.get("PATH", "").split(os.pathsep)
    if bindir not in parts:
        os.environ["PATH"] = os.pathsep.join([bindir, *parts])


def nbgrader_api(root, log_level: str = "WARN"):
    """An ``NbGraderAPI`` on the course directory ``root`` (config as in ``nbgrader_config.py``)."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    _tools_on_path()
    cfg = Config()
    cfg.CourseDirectory.root = str(Path(root).resolve())
    cfg.CourseDirectory.course_id = COURSE_ID
    cfg.Execute.timeout = CELL_TIMEOUT_S
    cfg.Execute.extra_arguments = KERNEL_ARGS
    cfg.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    cfg.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    cfg.OverwriteCells.add_missing_cells = True
    cfg.NbGraderAPI.log_level = log_level
    return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)


def build_course(out="course", assignments=None, log=print) -> Path:
    """Write the course directory ``out``: config, sources and the student release.

    Parameters
    ----------
    out : str or Path
        Course directory (created; an existing one is updated in place).
    assignments : list of str, optional
        Assignment names (default: all five).
    log : callable
        Receives one line per assignment.

    Returns
    -------
    Path
        The course directory.

    Raises
    ------
    ValueError
        Unknown assignment name, or a source notebook missing.
    RuntimeError
        nbgrader could not generate an assignment (its error is included).
    """
    names = assignment_names(assignments)
    out = Path(out)
    src_root = course_source_dir()
    for name in names:
        nb = src_root / name / f"{name}.ipynb"
        if not nb.is_file():
            raise ValueError(f"assignment {name!r}: source notebook {nb} not found")
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "nbgrader_config.py", CONFIG)
    meta_path = out / "course.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    meta.setdefault("assignments", {})
    api = nbgrader_api(out)
    for name in names:
        dest = out / "source" / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(src_root / name, dest, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*-graded"))
        res = api.generate_assignment(name, force=True, create=True)
        if not res.get("success"):
            raise RuntimeError(f"nbgrader generate_assignment failed for {name!r}:\n"
                               f"{res.get('error') or ''}{res.get('log') or ''}")
        meta["assignments"][name] = source_hash(dest / f"{name}.ipynb")
        log(f"[clkit] course: {name} -> {out / 'release' / name / (name + '.ipynb')}")
    meta["clkit"] = __version__
    atomic_write_json(meta_path, meta)
    return out
