"""Time each course assignment: execute the instructor's version in a fresh kernel.

Prints wall time and the CPU time of the kernel (user + sys of the child
processes), which does not depend on how busy the machine is. The issue asks for
under a minute per assignment on 2 CPU cores.

    python benchmarks/bench_course.py [ASSIGNMENT ...]
"""

import resource
import time

import nbformat
from nbclient import NotebookClient

from clkit.course import assignment_names
from clkit.course.build import KERNEL_ARGS, course_source_dir


def main(names):
    for name in assignment_names(names or None):
        path = course_source_dir() / name / f"{name}.ipynb"
        nb = nbformat.read(str(path), as_version=4)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=600, kernel_name="python3", extra_arguments=KERNEL_ARGS,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        print(f"{name:14s} wall {wall:6.1f} s   kernel CPU {cpu:6.1f} s", flush=True)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="ASSIGNMENT", help="assignments to time (default: all)")
    main(ap.parse_args().names)
