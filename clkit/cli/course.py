"""``clkit course build`` and ``clkit course grade`` (registered by :func:`register`)."""

from __future__ import annotations

import sys

__all__ = ["register"]


def _cmd_build(args) -> int:
    from ..course.build import build_course

    try:
        out = build_course(args.out, args.assignment, log=lambda line: print(line, flush=True))
    except (ValueError, RuntimeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    print(f"[clkit] course built in {out}: students open release/<assignment>/<assignment>.ipynb in "
          f"JupyterLab; collect their work as SUBMISSIONS/<student>/<assignment>/<assignment>.ipynb and run "
          f"'clkit course grade SUBMISSIONS --course {out}'", flush=True)
    return 0


def _cmd_grade(args) -> int:
    from ..course.grade import grade_submissions

    try:
        counts = grade_submissions(args.submissions, course=args.course, out=args.out, workers=args.workers,
                                   scheduler=args.scheduler, log=lambda line: print(line, flush=True))
    except (ValueError, TypeError, ConnectionError, RuntimeError) as exc:
        print(f"[clkit] ERROR: {exc}", file=sys.stderr, flush=True)
        return 2
    except KeyboardInterrupt:  # what was graded is kept; the library said so
        return 130
    return 1 if counts["failed"] else 0


def register(subparsers) -> None:
    """Add the ``course`` command (``build``, ``grade``) to ``clkit``'s subparsers."""
    from ..course.build import ASSIGNMENTS

    c = subparsers.add_parser("course", help="a graded course from the five papers (nbgrader): build, grade")
    sub = c.add_subparsers(dest="course_cmd", required=True)
    b = sub.add_parser("build", help="generate the student release of the assignments (nbgrader generate_assignment)")
    b.add_argument("--out", default="course", help="course directory (default: course)")
    b.add_argument("--assignment", nargs="+", default=None, metavar="NAME",
                   help=f"only these assignments (default: all of {', '.join(ASSIGNMENTS)})")
    b.set_defaults(func=_cmd_build)
    g = sub.add_parser("grade", help="autograde every submission (resumable, on Dask); grades.csv and feedback")
    g.add_argument("submissions", metavar="SUBMISSIONS_DIR",
                   help="folder in the layout <student>/<assignment>/<assignment>.ipynb")
    g.add_argument("--course", default="course",
                   help="course directory from 'clkit course build' (default: course; built when missing)")
    g.add_argument("--out", default=None, help="results folder (default: SUBMISSIONS_DIR-graded)")
    where = g.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=None, help="local worker processes (default: the core count)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="grade on an existing Dask cluster, e.g. tcp://host:8786 (shared file system)")
    g.set_defaults(func=_cmd_grade)
