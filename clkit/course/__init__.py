"""A graded course from the five papers, built and graded with nbgrader.

One assignment per paper lives under ``notebooks/course/source/<assignment>/`` in
nbgrader's format (solution regions, hidden tests, a manually graded open question
with its rubric). Their reference solutions are clkit's own functions: every
autograder test compares a student's function with clkit on visible examples,
hidden random inputs and the edge cases the papers leave open.

- :func:`build_course` (``clkit course build``) writes a course directory with an
  nbgrader config, the sources and the student release (``generate_assignment``);
- :func:`grade_submissions` (``clkit course grade``) autogrades a folder of
  submissions on Dask (:mod:`clkit.cluster`, as sweeps do), one task per submission,
  resumable, and writes ``grades.csv``, ``manual_grades.csv`` and per-student
  feedback (``generate_feedback``).
"""

from .build import ASSIGNMENTS, assignment_names, build_course, course_source_dir
from .grade import SubmissionError, find_submissions, grade_submissions

__all__ = ["ASSIGNMENTS", "assignment_names", "build_course", "course_source_dir", "find_submissions",
           "grade_submissions", "SubmissionError"]
